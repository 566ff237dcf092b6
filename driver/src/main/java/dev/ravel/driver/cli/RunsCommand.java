package dev.ravel.driver.cli;

import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ravel runs}: the runs found under the runs folder, newest first. */
@Command(name = "runs", mixinStandardHelpOptions = true, description = "List the runs found (newest first).")
final class RunsCommand implements Callable<Integer> {
  @Option(names = "--runs-dir", description = "Folder of run folders (default: RAVEL_TELEMETRY_RUNS_DIR, else runs).")
  Path runsDir;

  @picocli.CommandLine.ParentCommand
  RavelCli cli;

  @Option(names = "--json", description = "Machine-readable output: a JSON array, newest first.")
  boolean json;

  @Option(names = "--width", description = "Output width (default: the terminal's, else 120).")
  Integer width;

  record Row(String id, Instant start, String mode, String steps, long spans, long errors, String status) {}

  @Override
  public Integer call() throws IOException {
    runsDir = RunsFolder.resolve(runsDir, RunsFolder.env(cli));
    if (!Files.isDirectory(runsDir)) {
      System.err.println("ravel: no runs folder at " + runsDir.toAbsolutePath());
      return 1;
    }
    List<Row> rows = new ArrayList<>();
    try (Stream<Path> dirs = Files.list(runsDir)) {
      for (Path dir : dirs.filter(Files::isDirectory).toList()) {
        Row r = row(dir);
        if (r != null) {
          rows.add(r);
        }
      }
    }
    rows.sort(Comparator.comparing(Row::start).reversed());
    if (json) {
      List<java.util.Map<String, Object>> out = new ArrayList<>();
      for (Row r : rows) {
        java.util.Map<String, Object> o = new java.util.LinkedHashMap<>();
        o.put("run_id", r.id());
        o.put("started", r.start().toString());
        o.put("mode", r.mode());
        o.put("steps", r.steps().matches("\\d+") ? (Object) Integer.parseInt(r.steps()) : r.steps());
        o.put("spans", r.spans());
        o.put("errors", r.errors());
        o.put("status", r.status());
        o.put("folder", runsDir.resolve(r.id()).toAbsolutePath().toString());
        out.add(o);
      }
      System.out.println(new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(out));
      return 0;
    }
    int w = width != null ? width : Terminal.columns();
    int idWidth = Math.max(12, Math.min(32, w - 68)); // the id column gives way first, so rows fit the width
    String fmt = "%-" + idWidth + "s %-20s %-6s %6s %7s %6s  %s";
    System.out.println(cut(String.format(fmt, "RUN", "STARTED", "MODE", "STEPS", "SPANS", "ERRORS", "STATUS"), w));
    for (Row r : rows) {
      String id = r.id().length() > idWidth ? r.id().substring(0, idWidth - 1) + "~" : r.id();
      System.out.println(cut(String.format(fmt, id, r.start().toString().substring(0, 19).replace('T', ' '),
          r.mode(), r.steps(), r.spans(), r.errors(), r.status()), w));
    }
    if (rows.isEmpty()) {
      System.out.println("(no runs under " + runsDir.toAbsolutePath() + ")");
    }
    return 0;
  }

  private static String cut(String line, int width) {
    return line.length() <= width ? line : line.substring(0, Math.max(1, width - 1)) + "~";
  }

  private static Row row(Path dir) throws IOException {
    Path summary = dir.resolve(RunRecord.FILE);
    boolean hasSpans;
    try (Stream<Path> files = Files.list(dir)) {
      hasSpans = files.anyMatch(p -> p.getFileName().toString().endsWith(".jsonl"));
    }
    if (!Files.isRegularFile(summary) && !hasSpans) {
      return null;
    }
    RunTraces traces = RunTraces.readDir(dir);
    long errors = traces.spans().stream().filter(SpanRecord::isError).count() + traces.problems().size();
    String mode = "?";
    List<SpanRecord> stepRoots = traces.named(SpanNames.GRPO_STEP);
    String steps = String.valueOf(stepRoots.size());
    String status = "unfinished";
    Instant start = traces.spans().stream().map(s -> Instant.ofEpochSecond(0, s.startNanos())).min(Comparator.naturalOrder())
        .orElse(Files.getLastModifiedTime(dir).toInstant());
    java.util.Optional<RunRecord> record = readRecord(dir);
    if (record.isPresent()) {
      RunRecord r = record.get();
      mode = r.mode();
      steps = Integer.toString(r.steps());
      status = r.status().jsonName();
      start = r.started();
    } else if (!stepRoots.isEmpty()) {
      Object m = stepRoots.get(0).attribute(RavelAttributes.ALGORITHM_MODE);
      mode = m == null ? "?" : String.valueOf(m);
    } else {
      // a session of your own actors (no GRPO run): its traces, listed by ravel trace <run id>
      mode = "-";
      steps = "-";
      status = "traces " + traces.byTrace().size();
    }
    return new Row(dir.getFileName().toString(), start, mode, steps, traces.spans().size(), errors, status);
  }

  /** The run's record, or empty when it has none; one that cannot be read is shown as such, not fatal. */
  private static java.util.Optional<RunRecord> readRecord(Path dir) {
    try {
      return RunRecord.read(dir);
    } catch (IllegalArgumentException | java.io.UncheckedIOException e) {
      System.err.println("ravel: " + e.getMessage());
      return java.util.Optional.empty();
    }
  }
}
