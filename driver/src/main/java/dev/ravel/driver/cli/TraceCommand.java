package dev.ravel.driver.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.traces.JaegerSource;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceSourceException;
import dev.ravel.telemetry.view.HtmlWaterfall;
import dev.ravel.telemetry.view.PerfettoTrace;
import dev.ravel.telemetry.view.RunView;
import dev.ravel.telemetry.view.StepView;
import dev.ravel.telemetry.view.TerminalWaterfall;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ravel trace <run-id>}: a run's steps (duration, phase split, goodput), or one step's waterfall in
 * the terminal or as a self-contained HTML file, or the run's start-up as a waterfall ({@code --startup}), from the
 * run's JSONL files or from Jaeger.
 */
@Command(name = "trace", mixinStandardHelpOptions = true,
    description = "Show a run's steps, or one step's waterfall (--step), or its start-up's (--startup), from its JSONL"
        + " files or from Jaeger.")
final class TraceCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "RUN_ID", description = "The run (see ravel runs).")
  String runId;

  @Option(names = "--step", description = "Show this step's waterfall.")
  Long step;

  @Option(names = "--startup", description = "Show the run's start-up as a waterfall: Ray, the actors by role, each"
      + " worker's backend start (a launched server's own loading under it), the trainer's model load.")
  boolean startup;

  @Option(names = "--trace", paramLabel = "TRACE_ID", description = "Show the waterfall of this trace (its id or a"
      + " prefix of it) when it is not a GRPO step: a run of your own actors lists its traces.")
  String trace;

  @Option(names = "--source", defaultValue = "file", description = "file (default) or jaeger.")
  String source;

  @Option(names = "--html", paramLabel = "FILE", description = "Write the step's waterfall as one HTML file (default step: the last).")
  Path html;

  @Option(names = "--perfetto", paramLabel = "FILE",
      description = "Write the whole run as Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): a track per"
          + " process, a slice per span, an arrow per span link.")
  Path perfetto;

  @Option(names = "--runs-dir", description = "Folder of run folders (default: RAVEL_TELEMETRY_RUNS_DIR, else runs).")
  Path runsDir;

  @picocli.CommandLine.ParentCommand
  RavelCli cli;

  @Option(names = "--jaeger", defaultValue = "http://127.0.0.1:16686", description = "Jaeger query URL (default ${DEFAULT-VALUE}).")
  URI jaeger;

  @Option(names = "--service", description = "Service names to search in Jaeger (default: ravel).")
  List<String> services = new ArrayList<>();

  @Option(names = "--width", description = "Output width (default: the terminal's, else 120).")
  Integer width;

  @Option(names = "--plain", description = "No colours even on a terminal.")
  boolean plain;

  @Option(names = "--expand", description = "One row per span: do not fold runs of same-named sibling spans.")
  boolean expand;

  @Option(names = "--samples", description = "After the step's waterfall, the completions it kept (samples.jsonl).")
  boolean samples;

  @Option(names = "--json", description = "Machine-readable output: the steps of the run, or with --step the step's spans.")
  boolean json;

  @Override
  public Integer call() throws IOException {
    runsDir = RunsFolder.resolve(runsDir, RunsFolder.env(cli));
    List<SpanRecord> spans = switch (source) {
      case "file" -> fromFiles();
      case "jaeger" -> fromJaeger();
      default -> throw new dev.ravel.telemetry.config.ConfigException("--source",
          "unknown source '" + source + "' (valid: file, jaeger)");
    };
    if (spans == null) {
      return 1;
    }
    if (perfetto != null) {
      Files.writeString(perfetto, PerfettoTrace.render(spans), StandardCharsets.UTF_8);
      System.out.println("wrote " + perfetto.toAbsolutePath() + " (" + spans.size() + " spans of run " + runId
          + "; open it in ui.perfetto.dev)");
      if (step == null && html == null) {
        return 0;
      }
    }
    if (startup && (step != null || trace != null || samples)) {
      throw new dev.ravel.telemetry.config.ConfigException("--startup", "draws the run's start-up: leave out "
          + (step != null ? "--step" : trace != null ? "--trace" : "--samples"));
    }
    RunView run = RunView.of(spans);
    if (startup) {
      return startup(run);
    }
    if (json) {
      StepView view = step == null ? null : pickStep(run);
      if (step != null && view == null) {
        return 1;
      }
      ObjectMapper m = new ObjectMapper();
      System.out.println(m.writerWithDefaultPrettyPrinter().writeValueAsString(
          view == null ? TraceJson.run(runId, run) : TraceJson.step(runId, view)));
      return 0;
    }
    boolean tty = !plain && Terminal.colour();
    int w = width != null ? width : columns();
    if (trace != null && trace.isBlank()) {
      throw new dev.ravel.telemetry.config.ConfigException("--trace", "is blank: give a trace id or a prefix of one");
    }
    if (trace != null || (run.steps().isEmpty() && !run.otherTraces().isEmpty())) {
      return otherTrace(run, w, tty);
    }
    if (html != null || step != null) {
      StepView view = pickStep(run);
      if (view == null) {
        return 1;
      }
      if (html != null) {
        Files.writeString(html, new HtmlWaterfall().render(view, run), StandardCharsets.UTF_8);
        System.out.println("wrote " + html.toAbsolutePath() + " (step " + view.step() + " of run " + runId + ")");
        if (step == null) {
          return 0;
        }
      }
      System.out.print(new TerminalWaterfall().render(view, w, tty, expand));
      if (samples) {
        printSamples(view.step(), w);
      }
      return 0;
    }
    if (samples) {
      StepView view = pickStep(run);
      if (view == null) {
        return 1;
      }
      printSamples(view.step(), w);
      return 0;
    }
    System.out.print(new TerminalWaterfall().renderRun(run, w, tty));
    return 0;
  }

  /**
   * A run without GRPO steps (or {@code --trace}): the list of its traces, or the waterfall of the one
   * {@code --trace} names, on the terminal or as HTML.
   */
  private int otherTrace(RunView run, int w, boolean tty) throws IOException {
    if (trace == null) {
      if (html != null || step != null) {
        System.err.println("ravel: run " + runId + " has no steps (no rl.grpo.step spans); pick one of its traces"
            + " with --trace TRACE_ID");
        return 1;
      }
      System.out.print(TerminalWaterfall.renderTraces(run));
      return 0;
    }
    List<StepView> found = java.util.stream.Stream.concat(run.otherTraces().stream(), run.startups().stream())
        .filter(v -> v.traceId().startsWith(trace)).toList();
    if (found.isEmpty() || found.stream().map(StepView::traceId).distinct().count() > 1) {
      System.err.println("ravel: run " + runId + (found.isEmpty() ? " has no trace " : " has several traces ")
          + trace + " (its traces: ravel trace " + runId + ")");
      return 1;
    }
    StepView view = found.get(0);
    if (html != null) {
      Files.writeString(html, new HtmlWaterfall().render(view, run), StandardCharsets.UTF_8);
      System.out.println("wrote " + html.toAbsolutePath() + " (trace " + view.traceId() + " of run " + runId + ")");
      return 0;
    }
    System.out.print(new TerminalWaterfall().render(view, w, tty, expand));
    return 0;
  }

  /**
   * {@code --startup}: the run's start-up waterfall (each, for a run resumed in another process), on the terminal,
   * as JSON, or as HTML (the last start-up).
   */
  private int startup(RunView run) throws IOException {
    List<StepView> ups = run.startups();
    if (ups.isEmpty()) {
      System.err.println("ravel: run " + runId + " has no start-up trace (no " + dev.ravel.telemetry.spans.SpanNames
          .RUN_STARTUP + " span: a run from before start-up tracing, or telemetry without the step span group)");
      return 1;
    }
    if (html != null) {
      StepView last = ups.get(ups.size() - 1);
      Files.writeString(html, new HtmlWaterfall().render(last, run), StandardCharsets.UTF_8);
      System.out.println("wrote " + html.toAbsolutePath() + " (the start-up of run " + runId
          + (ups.size() > 1 ? ", the last of " + ups.size() : "") + ")");
      return 0;
    }
    if (json) {
      ObjectMapper m = new ObjectMapper();
      System.out.println(m.writerWithDefaultPrettyPrinter().writeValueAsString(
          ups.stream().map(v -> TraceJson.step(runId, v)).toList()));
      return 0;
    }
    boolean tty = !plain && Terminal.colour();
    int w = width != null ? width : columns();
    for (int i = 0; i < ups.size(); i++) {
      if (i > 0) {
        System.out.println();
      }
      System.out.print(new TerminalWaterfall().render(ups.get(i), w, tty, expand));
    }
    return 0;
  }

  /** The completions step {@code number} kept, from the run folder's {@code samples.jsonl}. */
  private void printSamples(long number, int width) throws IOException {
    Path file = runsDir.resolve(runId).resolve(RunTraces.SAMPLES_FILE);
    List<dev.ravel.telemetry.runs.SampleRecord> kept = new java.util.ArrayList<>();
    if (Files.isRegularFile(file)) {
      int n = 0;
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        n++;
        if (line.isBlank()) {
          continue;
        }
        try {
          dev.ravel.telemetry.runs.SampleRecord s = dev.ravel.telemetry.runs.SampleRecord.parse(line);
          if (s.step() == number) {
            kept.add(s);
          }
        } catch (IllegalArgumentException e) {
          System.err.println("ravel: " + file + ":" + n + ": unreadable line");
        }
      }
    }
    System.out.print(dev.ravel.telemetry.view.SamplesText.render(number, kept, width));
  }

  private StepView pickStep(RunView run) {
    if (run.steps().isEmpty()) {
      System.err.println("ravel: run " + runId + " has no steps (no rl.grpo.step spans)");
      return null;
    }
    if (step == null) {
      return run.steps().get(run.steps().size() - 1);
    }
    StepView v = run.step(step).orElse(null);
    if (v == null) {
      System.err.println("ravel: run " + runId + " has no step " + step + " (steps " + run.steps().get(0).step()
          + ".." + run.steps().get(run.steps().size() - 1).step() + ")");
    }
    return v;
  }

  private List<SpanRecord> fromFiles() {
    Path dir = runsDir.resolve(runId);
    if (!Files.isDirectory(dir)) {
      System.err.println("ravel: no run '" + runId + "' under " + runsDir.toAbsolutePath() + " (ravel runs lists them)");
      return null;
    }
    RunTraces traces = RunTraces.readDir(dir);
    traces.problems().forEach(p -> System.err.println("ravel: " + p));
    if (traces.spans().isEmpty()) {
      System.err.println("ravel: run '" + runId + "' has no spans in " + dir);
      return null;
    }
    return traces.spans();
  }

  private List<SpanRecord> fromJaeger() throws IOException {
    Instant from = Instant.now().minus(Duration.ofDays(7));
    Instant to = Instant.now().plus(Duration.ofMinutes(5));
    java.util.Optional<RunRecord> record = RunRecord.read(runsDir.resolve(runId));
    if (record.isPresent()) {
      from = record.get().started().minus(Duration.ofMinutes(1));
      to = record.get().finished().plus(Duration.ofMinutes(1));
    }
    List<String> names = services.isEmpty() ? List.of("ravel") : services;
    try {
      List<SpanRecord> spans = JaegerSource.of(jaeger, Duration.ofSeconds(10)).runSpans(runId, names, from, to);
      if (spans.isEmpty()) {
        System.err.println("ravel: no spans of run '" + runId + "' in Jaeger at " + jaeger + " (services " + names + ")");
        return null;
      }
      return spans;
    } catch (TraceSourceException e) {
      System.err.println("ravel: " + e.getMessage());
      return null;
    }
  }

  private static int columns() {
    return Math.max(60, Terminal.columns());
  }

}
