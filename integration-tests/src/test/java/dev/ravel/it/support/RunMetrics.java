package dev.ravel.it.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
        String text = Files.readString(f);
        List<String> lines = text.lines().toList();
        for (int i = 0; i < lines.size(); i++) {
          String line = lines.get(i);
          long sum = 0;
          boolean found = false;
          JsonNode root;
          try {
            root = JSON.readTree(line);
          } catch (IOException e) {
            if (i == lines.size() - 1 && !text.endsWith("\n")) {
              // a write torn when Ray killed the worker at the head's stop: the exit hook's repeat of the
              // cumulative values the session's own flush already wrote on the line before
              break;
            }
            throw e;
          }
          for (JsonNode rm : root.path("resourceMetrics")) {
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
