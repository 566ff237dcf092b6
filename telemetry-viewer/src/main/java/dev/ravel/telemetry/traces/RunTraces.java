package dev.ravel.telemetry.traces;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * All spans of one run, read from its JSON Lines files ({@code runs/<run-id>/*.jsonl}, one per process),
 * with every unreadable line reported as a problem naming its file and line number while the rest of the
 * run is still read.
 */
public final class RunTraces {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final List<SpanRecord> spans;
  private final List<String> problems;

  private RunTraces(List<SpanRecord> spans, List<String> problems) {
    this.spans = List.copyOf(spans);
    this.problems = List.copyOf(problems);
  }

  /** The run's step log ({@code runs/<run-id>/steps.jsonl}, a line per step): in the run folder, not spans. */
  public static final String STEP_LOG_FILE = "steps.jsonl";
  /** The run's sample completions ({@code runs/<run-id>/samples.jsonl}): in the run folder, not spans. */
  public static final String SAMPLES_FILE = "samples.jsonl";

  /**
   * Reads every {@code *.jsonl} file of {@code runDir} but the step log and the samples, in file name order.
   * Unreadable lines become {@link #problems()}; lines of metrics or logs are skipped.
   *
   * @param runDir the run's folder, {@code runs/<run-id>/}
   * @return the run's spans and problems
   * @throws IllegalArgumentException if {@code runDir} is not a folder
   * @throws UncheckedIOException if the folder or one of its files cannot be read
   */
  public static RunTraces readDir(Path runDir) {
    if (!Files.isDirectory(runDir)) {
      throw new IllegalArgumentException("no such run folder: " + runDir);
    }
    List<SpanRecord> spans = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    try (Stream<Path> files = Files.list(runDir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".jsonl"))
          .filter(p -> !List.of(STEP_LOG_FILE, SAMPLES_FILE).contains(p.getFileName().toString()))
          // metrics files hold no spans, and a process may still be writing its last export when a run is read
          .filter(p -> !p.getFileName().toString().startsWith(ProcessTelemetry.METRICS_FILE_PREFIX)).sorted()
          .toList()) {
        readFile(f, spans, problems);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + runDir, e);
    }
    return new RunTraces(spans, problems);
  }

  private static void readFile(Path f, List<SpanRecord> spans, List<String> problems) throws IOException {
    // lenient decoding: a broken byte sequence spoils its line (reported below), not the whole file
    java.nio.charset.CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(java.nio.charset.CodingErrorAction.REPLACE)
        .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPLACE);
    try (BufferedReader r = new BufferedReader(new java.io.InputStreamReader(Files.newInputStream(f), decoder))) {
      String line;
      int n = 0;
      while ((line = r.readLine()) != null) {
        n++;
        if (line.isBlank()) {
          continue;
        }
        try {
          JsonNode node = JSON.readTree(line);
          if (node.has("resourceMetrics") || node.has("resourceLogs")) {
            continue; // another signal in the same folder (metrics files, a collector's mixed output)
          }
          spans.addAll(OtlpJson.spans(node, f.getFileName() + ":" + n));
        } catch (IOException | RuntimeException e) {
          problems.add(f + ":" + n + ": unreadable line (" + firstLine(e.getMessage()) + ")");
        }
      }
    }
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "?";
    }
    int i = s.indexOf('\n');
    return i < 0 ? s : s.substring(0, i);
  }

  /** {@return every span read, file by file in the order of their lines; unmodifiable} */
  public List<SpanRecord> spans() {
    return spans;
  }

  /** {@return the lines that could not be read, as {@code file:line: reason}; unmodifiable} */
  public List<String> problems() {
    return problems;
  }

  /** {@return the spans by span id; of spans sharing an id, the first read} */
  public Map<String, SpanRecord> byId() {
    return spans.stream().collect(Collectors.toMap(SpanRecord::spanId, Function.identity(), (a, b) -> a));
  }

  /**
   * {@return the spans with the given name, in the order read}
   *
   * @param name the span name
   */
  public List<SpanRecord> named(String name) {
    return spans.stream().filter(s -> s.name().equals(name)).toList();
  }

  /** {@return the spans grouped by trace id} */
  public Map<String, List<SpanRecord>> byTrace() {
    return spans.stream().collect(Collectors.groupingBy(SpanRecord::traceId));
  }
}
