package dev.ravel.driver.grpo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.driver.config.Keys;
import dev.ravel.driver.config.RunConfig;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.workers.task.DatasetPrompts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A run's own data, checked and prepared before Ray starts: {@code python -m ravel_checks.prepare} (with the
 * Ray virtualenv's interpreter) loads {@code model.path}'s tokenizer, reads every row of {@code data.train},
 * renders and tokenizes the prompts, and imports {@code reward.function}; the rows go to
 * {@code runs/<run-id>/data/train.jsonl}, which the run's steps draw from.
 *
 * @param file the prepared rows
 * @param prompts the rows, as the steps draw them
 * @param vocabSize the checkpoint's vocabulary
 * @param eosToken the tokenizer's end of sequence
 * @param maxPositions the checkpoint's longest sequence
 * @param dropped prompts left out for being longer than {@code grpo.max_prompt_tokens}
 * @param truncated prompts cut from the left to {@code grpo.max_prompt_tokens}
 * @param rewardFunction the reward function the run calls
 * @param eval the held-out prompts ({@code data.eval}), null without
 */
public record PreparedData(Path file, DatasetPrompts prompts, int vocabSize, int eosToken, int maxPositions,
    int dropped, int truncated, String rewardFunction, DatasetPrompts eval) {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The reward of a run on your data when {@code reward.function} is empty. */
  public static final String DEFAULT_REWARD = "exact_match";
  /** Bound on the preparation (it imports transformers and tokenizes every prompt). */
  private static final long TIMEOUT_S = 600;

  /** The reward function {@code config} names, or the default. */
  public static String rewardFunction(RunConfig config) {
    String f = config.get(Keys.REWARD_FUNCTION);
    return f.isBlank() ? DEFAULT_REWARD : f;
  }

  /**
   * Prepares {@code config}'s data into {@code runDir/data/train.jsonl} with {@code python}, the interpreter of the
   * Ray virtualenv, and Ravel's Python package under {@code ravelHome}.
   *
   * @throws ConfigException naming the key ({@code model.path}, {@code data.train}, {@code reward.function}) of
   *     whatever is wrong, in one line
   */
  public static PreparedData prepare(RunConfig config, Path runDir, Path python, Path ravelHome) {
    for (var key : List.of(Keys.TRAIN, Keys.EVAL)) {
      for (String f : config.get(key)) {
        Path p = Path.of(f);
        if (!Files.exists(p)) {
          throw new ConfigException(key.dotted(), f + ": no such file or folder");
        }
        try {
          if (Files.isRegularFile(p) && Files.size(p) == 0) {
            throw new ConfigException(key.dotted(), f + ": no rows (an empty file)");
          }
        } catch (IOException e) {
          throw new ConfigException(key.dotted(), f + ": cannot read (" + e.getMessage() + ")");
        }
      }
    }
    Path out = runDir.resolve("data").resolve("train.jsonl");
    Path evalOut = runDir.resolve("data").resolve("eval.jsonl");
    Map<String, Object> spec = new LinkedHashMap<>();
    spec.put("model_path", config.get(Keys.MODEL_PATH));
    spec.put("train", config.get(Keys.TRAIN));
    spec.put("prompt_key", config.get(Keys.PROMPT_KEY));
    spec.put("answer_key", config.get(Keys.ANSWER_KEY));
    spec.put("chat_template", config.get(Keys.CHAT_TEMPLATE));
    spec.put("system_prompt", config.get(Keys.SYSTEM_PROMPT));
    spec.put("max_prompt_tokens", config.get(Keys.MAX_PROMPT_TOKENS));
    spec.put("long_prompts", config.get(Keys.LONG_PROMPTS));
    spec.put("reward_function", rewardFunction(config));
    spec.put("reward_code_path", config.get(Keys.REWARD_CODE_PATH));
    spec.put("out", out.toAbsolutePath().toString());
    if (!config.get(Keys.EVAL).isEmpty()) {
      spec.put("eval", config.get(Keys.EVAL));
      spec.put("eval_out", evalOut.toAbsolutePath().toString());
    }
    try {
      Files.createDirectories(out.getParent());
      Path specFile = out.resolveSibling("prepare-spec.json");
      JSON.writeValue(specFile.toFile(), spec);
      Path stdout = out.resolveSibling("prepare.out");
      Path stderr = out.resolveSibling("prepare.err");
      Path pkg = ravelHome.resolve("workers/src/main/python");
      ProcessBuilder pb = new ProcessBuilder(python.toString(), "-m", "ravel_checks.prepare", specFile.toString())
          .directory(pkg.toFile()).redirectOutput(stdout.toFile()).redirectError(stderr.toFile());
      pb.environment().put("PYTHONPATH", pkg.toString());
      pb.environment().put("HF_HUB_OFFLINE", "1");
      pb.environment().put("TRANSFORMERS_OFFLINE", "1");
      Process p = pb.start();
      if (!p.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("preparing " + Keys.TRAIN + " took over " + TIMEOUT_S + " s; see " + stderr);
      }
      String err = Files.readString(stderr, StandardCharsets.UTF_8).strip();
      if (p.exitValue() == 2 && !err.isEmpty()) {
        String last = err.lines().reduce((a, b) -> b).orElse(err);
        int colon = last.indexOf(": ");
        throw colon > 0 && last.substring(0, colon).matches("[a-z_]+\\.[a-z_]+")
            ? new ConfigException(last.substring(0, colon), last.substring(colon + 2))
            : new ConfigException(Keys.TRAIN.dotted(), last);
      }
      if (p.exitValue() != 0) {
        throw new IllegalStateException("preparing " + Keys.TRAIN + " failed (exit " + p.exitValue() + "): "
            + err.lines().reduce((a, b) -> b).orElse("") + " (all of it in " + stderr + ")");
      }
      List<String> lines = Files.readAllLines(stdout, StandardCharsets.UTF_8);
      JsonNode s = JSON.readTree(lines.get(lines.size() - 1));
      return new PreparedData(out, DatasetPrompts.read(out), s.get("vocab_size").asInt(), s.get("eos_token").asInt(),
          s.get("max_positions").asInt(), s.get("dropped").asInt(), s.get("truncated").asInt(),
          s.get("reward").asText(), config.get(Keys.EVAL).isEmpty() ? null : DatasetPrompts.read(evalOut));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot prepare " + Keys.TRAIN + " under " + out.getParent() + ": "
          + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while preparing " + Keys.TRAIN, e);
    }
  }
}
