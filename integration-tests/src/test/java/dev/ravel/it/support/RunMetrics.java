package dev.ravel.it.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** Reads counters back from a run's OTLP JSON Lines metrics files ({@code metrics-<role>-<pid>.jsonl}). */
public final class RunMetrics {
  private static final ObjectMapper JSON = new ObjectMapper();

  private RunMetrics() {}

  /**
   * The sum over the metrics files of processes of {@code role} of the last exported cumulative value of
   * the integer counter {@code name} (all its data points, whatever their attributes).
   */
  public static long counter(Path runDir, String role, String name) throws IOException {
    long total = 0;
    try (Stream<Path> files = Files.list(runDir)) {
      for (Path f : files.filter(p -> p.getFileName().toString().startsWith("metrics-" + role + "-")).toList()) {
        long last = 0;
        for (String line : Files.readAllLines(f)) {
          long sum = 0;
          boolean found = false;
          for (JsonNode rm : JSON.readTree(line).path("resourceMetrics")) {
            for (JsonNode sm : rm.path("scopeMetrics")) {
              for (JsonNode m : sm.path("metrics")) {
                if (m.path("name").asText().equals(name)) {
                  for (JsonNode dp : m.path("sum").path("dataPoints")) {
                    sum += Long.parseLong(dp.path("asInt").asText("0"));
                    found = true;
                  }
                }
              }
            }
          }
          if (found) {
            last = sum;
          }
        }
        total += last;
      }
    }
    return total;
  }
}
