package dev.ravel.workers.task;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Your prompts, as {@code python -m ravel_checks.prepare} wrote them (rendered with the model's tokenizer): each
 * row's prompt text, token ids, answer and metadata. Steps take rows in epochs: every epoch is one pass over
 * the rows in a shuffled order seeded by the run's seed and the epoch, so each row is used once per epoch and a
 * run (or a resumed run) at step {@code s} always gets the same rows, in the driver (sync) or the collector
 * (async), which is handed this object. Immutable.
 */
public final class DatasetPrompts implements PromptSource, java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long EPOCH_STREAM = 104_729L;

  private final List<Problem> rows;
  private final Map<String, int[]> tokens;

  private DatasetPrompts(List<Problem> rows, Map<String, int[]> tokens) {
    this.rows = List.copyOf(rows);
    this.tokens = Map.copyOf(tokens);
  }

  /**
   * The prepared rows of {@code file}.
   *
   * @throws IllegalArgumentException naming the file and line of a row that is not a prepared prompt, or an
   *     empty file
   */
  public static DatasetPrompts read(Path file) {
    List<Problem> rows = new ArrayList<>();
    Map<String, int[]> tokens = new HashMap<>();
    try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String line;
      int n = 0;
      while ((line = r.readLine()) != null) {
        n++;
        if (line.isBlank()) {
          continue;
        }
        JsonNode row;
        try {
          row = JSON.readTree(line);
        } catch (IOException e) {
          throw new IllegalArgumentException(file + ":" + n + ": not JSON", e);
        }
        JsonNode ids = row.path("tokens");
        if (!row.path("prompt").isTextual() || !ids.isArray() || ids.isEmpty()) {
          throw new IllegalArgumentException(file + ":" + n + ": not a prepared prompt (prompt, tokens)");
        }
        int[] t = new int[ids.size()];
        for (int i = 0; i < t.length; i++) {
          t[i] = ids.get(i).asInt();
        }
        Problem p = new Problem(row.get("prompt").asText(), row.path("answer").asText(""),
            row.path("metadata").isObject() ? row.get("metadata").toString() : "{}");
        rows.add(p);
        tokens.put(p.prompt(), t);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
    }
    if (rows.isEmpty()) {
      throw new IllegalArgumentException(file + ": no prompts");
    }
    return new DatasetPrompts(rows, tokens);
  }

  /** The rows, in file order. */
  public List<Problem> rows() {
    return rows;
  }

  @Override
  public List<Problem> sample(int n, long runSeed, long step) {
    List<Problem> out = new ArrayList<>(n);
    long first = step * n;
    int[] order = null;
    long epochOfOrder = -1;
    for (long g = first; g < first + n; g++) {
      long epoch = g / rows.size();
      if (epoch != epochOfOrder) {
        order = order(runSeed, epoch);
        epochOfOrder = epoch;
      }
      out.add(rows.get(order[(int) (g % rows.size())]));
    }
    return out;
  }

  /** The epoch a step's first row belongs to (each epoch passes over every row once). */
  public long epochOf(int promptsPerStep, long step) {
    return step * promptsPerStep / rows.size();
  }

  /** The epochs begun by the first {@code steps} steps (each epoch passes over every row once). */
  public long epochsBegun(int promptsPerStep, long steps) {
    return steps == 0 ? 0 : (steps * promptsPerStep - 1) / rows.size() + 1;
  }

  /** Epoch {@code epoch}'s order of the rows: a Fisher-Yates shuffle seeded by the run's seed and the epoch. */
  int[] order(long runSeed, long epoch) {
    int[] idx = new int[rows.size()];
    for (int i = 0; i < idx.length; i++) {
      idx[i] = i;
    }
    SplittableRandom rng = new SplittableRandom(runSeed * EPOCH_STREAM + epoch);
    for (int i = idx.length - 1; i > 0; i--) {
      int j = rng.nextInt(i + 1);
      int t = idx[i];
      idx[i] = idx[j];
      idx[j] = t;
    }
    return idx;
  }

  @Override
  public int[] encode(Problem problem) {
    int[] t = tokens.get(problem.prompt());
    if (t == null) {
      throw new IllegalArgumentException("not a prompt of this dataset: '" + problem.prompt() + "'");
    }
    return t.clone();
  }
}
