package dev.ravel.driver.grpo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code runs/<run-id>/run.json}: what a run was and what it measured, written when it ends (and read by
 * {@code ravel runs}).
 */
public final class RunSummary {
  /** The file name inside a run folder. */
  public static final String FILE = "run.json";
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private RunSummary() {}

  /** Writes the summary; returns its path. */
  public static Path write(Path runDir, String runId, String mode, Instant started, Instant finished, String status,
      List<StepMetrics> steps, Map<String, Object> config, Map<String, Object> extra) {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("run_id", runId);
    root.put("mode", mode);
    root.put("status", status);
    root.put("started", started.toString());
    root.put("finished", finished.toString());
    root.put("steps", steps.size());
    root.put("config", config);
    root.put("step_metrics", steps);
    root.putAll(extra);
    Path file = runDir.resolve(FILE);
    try {
      Files.createDirectories(runDir);
      JSON.writeValue(file.toFile(), root);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
    }
  }

  /** The mean reward of the first and last {@code n} steps, as a one-line comparison. */
  public static String rewardTrend(List<StepMetrics> steps, int n) {
    if (steps.isEmpty()) {
      return "no steps";
    }
    int k = Math.max(1, Math.min(n, steps.size() / 2));
    double first = steps.subList(0, k).stream().mapToDouble(StepMetrics::rewardMean).average().orElse(0);
    double last = steps.subList(steps.size() - k, steps.size()).stream().mapToDouble(StepMetrics::rewardMean).average().orElse(0);
    return String.format("reward %.3f -> %.3f (mean of first/last %d steps)", first, last, k);
  }
}
