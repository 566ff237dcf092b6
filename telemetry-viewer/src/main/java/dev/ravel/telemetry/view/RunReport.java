package dev.ravel.telemetry.view;

import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.telemetry.runs.StepRecord;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.traces.RunTraces;
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
import java.util.stream.Stream;

/**
 * One run as a self-contained HTML page: the reward (mean with its spread), KL and loss curves with one point
 * per step, each step's wall time stacked by goodput bucket, the engine's queue-time and preemption series,
 * and a table with a row per step; clicking a row, a point or a bar shows that step's waterfall
 * ({@link HtmlWaterfall}) in a frame below.
 *
 * <p>Read from a run folder ({@link #read(Path)}): {@code steps.jsonl} (a line per step, written as each step
 * ends, so a crashed run has its curves), {@code run.json} when the run ended, the span files (goodput and
 * waterfalls) and the metrics files (engine series, cumulative OTLP points turned into per-interval values).
 * A run without spans still gets its curves; unreadable lines are {@link #problems()}, never fatal.
 *
 * <p>The page needs no network: CSS and script are inline ({@code report.css}, {@code report.js} beside
 * this class), a Content-Security-Policy forbids any fetch, charts are inline SVG drawn by the page, and the
 * document is ASCII. DOM hooks (stable, for tests and tools): {@code #report-data}; charts
 * {@code svg.chart} with ids {@code chart-reward}, {@code chart-kl}, {@code chart-loss},
 * {@code chart-step-time}, {@code chart-engine-queue}, {@code chart-engine-preemptions}; in them
 * {@code .point} ({@code data-step}, {@code data-series}) and {@code .bar-part} ({@code data-step},
 * {@code data-bucket}); {@code tr.step-row} ({@code data-step}, class {@code selected} when shown);
 * {@code iframe#waterfall-frame} ({@code data-step} of the step shown, {@code data-loaded} once its page is
 * in), {@code #waterfall-title}; {@code script.waterfall-doc} ({@code data-step}) holds a step's waterfall page,
 * gzip-compressed and base64-encoded (the page inflates it with the browser's {@code DecompressionStream}).
 * Opening {@code report.html#step=N} shows step N's waterfall at once.
 */
public final class RunReport {
  /** Steps whose waterfall is embedded by default (the last ones of a longer run). */
  public static final int DEFAULT_MAX_WATERFALLS = 200;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  private static final String[] QUEUE_SUM = {"rl.engine.queue_time", "rl.engine.server.queue_time.sum"};
  private static final String QUEUE_COUNT_SERVER = "rl.engine.server.queue_time.count";
  private static final String PREEMPTIONS = "rl.engine.preemptions";
  /** The refit's stages in the order weights move through them (each path has some of them). */
  static final List<String> REFIT_STAGES = List.of(dev.ravel.telemetry.spans.SpanNames.REFIT_GATHER,
      dev.ravel.telemetry.spans.SpanNames.REFIT_PUT, dev.ravel.telemetry.spans.SpanNames.REFIT_FETCH,
      dev.ravel.telemetry.spans.SpanNames.REFIT_TRANSFER, dev.ravel.telemetry.spans.SpanNames.REFIT_PAUSE,
      dev.ravel.telemetry.spans.SpanNames.REFIT_LOAD, dev.ravel.telemetry.spans.SpanNames.REFIT_RESUME);

  private final String runId;
  private final RunRecord summary;
  private final List<StepRecord> steps;
  private final RunView run;
  private final List<EngineSeries> engine;
  private final List<String> problems;
  private final List<dev.ravel.telemetry.runs.SampleRecord> samples;

  private RunReport(String runId, RunRecord summary, List<StepRecord> steps, RunView run, List<EngineSeries> engine,
      List<String> problems) {
    this(runId, summary, steps, run, engine, problems, List.of());
  }

  private RunReport(String runId, RunRecord summary, List<StepRecord> steps, RunView run, List<EngineSeries> engine,
      List<String> problems, List<dev.ravel.telemetry.runs.SampleRecord> samples) {
    this.samples = List.copyOf(samples);
    this.runId = runId;
    this.summary = summary;
    this.steps = List.copyOf(steps);
    this.run = run;
    this.engine = List.copyOf(engine);
    this.problems = List.copyOf(problems);
  }

  /**
   * Reads the run folder {@code runDir} ({@code runs/<run-id>/}).
   *
   * @throws IllegalArgumentException when the folder does not exist or holds neither steps nor spans
   */
  public static RunReport read(Path runDir) {
    if (!Files.isDirectory(runDir)) {
      throw new IllegalArgumentException("no such run folder: " + runDir);
    }
    List<String> problems = new ArrayList<>();
    RunRecord summary = null;
    try {
      summary = RunRecord.read(runDir).orElse(null);
    } catch (IllegalArgumentException | UncheckedIOException e) {
      problems.add(e.getMessage().lines().findFirst().orElse(RunRecord.FILE + ": unreadable"));
    }
    List<StepRecord> steps = new ArrayList<>();
    forEachLine(runDir.resolve(RunTraces.STEP_LOG_FILE), problems, StepRecord::parse, steps::add);
    if (steps.isEmpty() && summary != null) {
      steps.addAll(summary.stepMetrics()); // a run from before steps.jsonl
    }
    List<dev.ravel.telemetry.runs.SampleRecord> samples = new ArrayList<>();
    forEachLine(runDir.resolve(RunTraces.SAMPLES_FILE), problems, dev.ravel.telemetry.runs.SampleRecord::parse,
        samples::add);
    RunTraces traces = RunTraces.readDir(runDir);
    problems.addAll(traces.problems());
    if (steps.isEmpty() && traces.spans().isEmpty()) {
      throw new IllegalArgumentException("run folder " + runDir + " has no steps (" + RunTraces.STEP_LOG_FILE
          + ") and no spans");
    }
    RunView view = RunView.of(traces.spans());
    String id = summary != null ? summary.runId()
        : !view.runId().isEmpty() ? view.runId() : runDir.getFileName().toString();
    return new RunReport(id, summary, steps, view, engineSeries(runDir, problems), problems, samples);
  }

  /** A report of spans and step lines already read (no run.json, no engine series). */
  static RunReport of(String runId, List<StepRecord> steps, RunView run) {
    return new RunReport(runId, null, steps, run, List.of(), List.of());
  }

  public String runId() {
    return runId;
  }

  /** {@return the run's resolved configuration (its run.json), null when it has none} */
  Map<String, Object> config() {
    return summary == null ? null : summary.config();
  }

  /** The steps the report draws (one point per step on every curve). */
  public int stepCount() {
    return steps.size();
  }

  /** {@return the traces the report lists instead of steps: those of a run without GRPO steps, else 0} */
  public int traceCount() {
    return steps.isEmpty() && run.steps().isEmpty() ? run.otherTraces().size() : 0;
  }

  /** Lines or files that could not be read (the report was drawn without them). */
  public List<String> problems() {
    return problems;
  }

  /** The page, with the waterfalls of at most {@link #DEFAULT_MAX_WATERFALLS} steps embedded. */
  public String render() {
    return render(DEFAULT_MAX_WATERFALLS);
  }

  /** The page, embedding the waterfalls of the last {@code maxWaterfalls} steps (0: none). */
  public String render(int maxWaterfalls) {
    if (maxWaterfalls < 0) {
      throw new IllegalArgumentException("maxWaterfalls must not be negative: " + maxWaterfalls);
    }
    ObjectNode data = data();
    StringBuilder h = new StringBuilder(64 * 1024);
    String title = "Ravel run " + runId;
    head(h, title, "; frame-src 'self'", "<body>\n");

    h.append("<header class=\"run-header\">\n<h1>Run <span class=\"run-id\">").append(Fmt.html(runId))
        .append("</span></h1>\n<dl class=\"run-meta\">\n");
    JsonNode r = data.get("run");
    meta(h, "mode", "Mode", r.path("mode").asText(""));
    meta(h, "status", "Status", r.path("status").asText("running or stopped (no run.json)"));
    meta(h, "steps", "Steps", Integer.toString(steps.size()));
    meta(h, "started", "Started", r.path("started").asText(""));
    meta(h, "finished", "Finished", r.path("finished").asText(""));
    if (r.has("versions")) {
      StringBuilder v = new StringBuilder();
      r.get("versions").fields().forEachRemaining(e -> v.append(v.length() == 0 ? "" : ", ").append(e.getKey())
          .append(' ').append(e.getValue().asText()));
      meta(h, "versions", "Versions", v.toString());
    }
    h.append("</dl>\n</header>\n<main>\n<section class=\"charts\">\n");
    chart(h, "chart-reward", "Reward (mean, band: +/- std)");
    chart(h, "chart-kl", "KL to reference");
    chart(h, "chart-loss", "Loss");
    chart(h, "chart-grad-norm", "Gradient norm before clipping");
    chart(h, "chart-learning-rate", "Learning rate");
    chart(h, "chart-entropy", "Entropy of the sampled tokens (mean)");
    chart(h, "chart-eval", "Eval set: reward and accuracy");
    chart(h, "chart-reward-components", "Reward components (mean)");
    chart(h, "chart-length", "Completion length (tokens: mean, max)");
    chart(h, "chart-clip", "Tokens clipped: low, high, dual (share)");
    chart(h, "chart-lag", "Policy lag of the trajectories trained (weight versions: mean, max)");
    chart(h, "chart-pipeline", "Async pipeline at step end: groups in the buffer, collector calls in flight");
    chart(h, "chart-step-time", "Step time by goodput bucket (s)");
    chart(h, "chart-refit", "Refit by stage (s; the longest worker's span of each stage)");
    boolean perStep = steps.stream().anyMatch(s -> s.engine() != null);
    chart(h, "chart-engine-queue", "Engine queue time, mean " + (perStep ? "per step" : "per interval") + " (s)");
    chart(h, "chart-engine-preemptions", "Engine preemptions " + (perStep ? "per step" : "per interval"));
    chart(h, "chart-engine-load", "Engine load over each step (time-weighted mean): requests running, waiting;"
        + " KV budget held (share)");
    h.append("</section>\n<section class=\"steps\">\n<h2>Steps</h2>\n<table id=\"steps\">\n<thead><tr>")
        .append("<th>step</th><th>reward</th><th>std</th><th>KL</th><th>loss</th><th>clip</th><th>time</th>")
        .append("<th>tokens/s</th><th>used</th><th>dropped</th><th>no signal</th><th>grad norm</th><th>lr</th>")
        .append("<th>entropy</th><th>eval</th><th>length</th><th>spans</th></tr></thead>\n<tbody>\n");
    for (JsonNode s : data.get("steps")) {
      h.append("<tr class=\"step-row\" tabindex=\"0\" data-step=\"").append(s.get("step").asLong()).append("\">")
          .append(td(Long.toString(s.get("step").asLong()))).append(td(num(s.get("reward_mean"))))
          .append(td(num(s.get("reward_std")))).append(td(num(s.get("kl")))).append(td(num(s.get("loss"))))
          .append(td(num(s.get("clip_fraction")))).append(td(num(s.get("step_s")) + " s"))
          .append(td(num(s.get("tokens_per_s")))).append(td(s.path("trajectories").asText("")))
          .append(td(s.path("dropped").asText(""))).append(td(s.path("zero_advantage_groups").asText("")))
          .append(td(num(s.get("grad_norm")))).append(td(sig(s.get("learning_rate")))).append(td(num(s.get("entropy"))))
          .append(td(num(s.get("eval_reward")))).append(td(num(s.get("length_mean"))))
          .append(td(s.path("spans").asText("0")))
          .append("</tr>\n");
    }
    h.append("</tbody>\n</table>\n</section>\n");
    List<StepView> traces = steps.isEmpty() && run.steps().isEmpty() ? run.otherTraces() : List.of();
    if (!traces.isEmpty()) {
      // a run of your own actors (no GRPO steps): its traces, each row opening its waterfall as a step's does
      h.append("<section class=\"traces\">\n<h2>Traces</h2>\n<p>This run has no GRPO steps: its traces by start")
          .append(" time. Click one to see its waterfall.</p>\n<table id=\"traces\">\n<thead><tr><th>root</th>")
          .append("<th>start (UTC)</th><th>duration</th><th>spans</th><th>processes</th><th>errors</th><th>trace</th>")
          .append("</tr></thead>\n<tbody>\n");
      for (int i = 0; i < traces.size(); i++) {
        StepView v = traces.get(i);
        h.append("<tr class=\"step-row trace-row\" tabindex=\"0\" data-step=\"t").append(i + 1).append("\">")
            .append(td(v.root().span().name())).append(td(Fmt.instant(v.startNanos())))
            .append(td(Fmt.duration(v.durationNanos()))).append(td(Integer.toString(v.spanCount())))
            .append(td(Integer.toString(v.processes().size()))).append(td(Integer.toString(v.errorCount())))
            .append(td(v.traceId())).append("</tr>\n");
      }
      h.append("</tbody>\n</table>\n</section>\n");
    }
    if (!run.startups().isEmpty()) {
      // the run's start-up (Ray, the actors, model loads, a launched server's own loading): rows s1, s2, ...
      h.append("<section class=\"startup\">\n<h2>Start-up</h2>\n<table id=\"startup\">\n<thead><tr><th>start-up</th>")
          .append("<th>start (UTC)</th><th>duration</th><th>spans</th><th>processes</th><th>errors</th>")
          .append("<th>trace</th></tr></thead>\n<tbody>\n");
      for (int i = 0; i < run.startups().size(); i++) {
        StepView v = run.startups().get(i);
        h.append("<tr class=\"startup-row\" tabindex=\"0\" data-step=\"s").append(i + 1).append("\">")
            .append(td(Integer.toString(i + 1))).append(td(Fmt.instant(v.startNanos())))
            .append(td(Fmt.duration(v.durationNanos()))).append(td(Integer.toString(v.spanCount())))
            .append(td(Integer.toString(v.processes().size()))).append(td(Integer.toString(v.errorCount())))
            .append(td(v.traceId())).append("</tr>\n");
      }
      h.append("</tbody>\n</table>\n</section>\n");
    }
    h.append("<section class=\"waterfall\">\n<h2 id=\"waterfall-title\">")
        .append(traces.isEmpty() ? "Click a step to see its waterfall</h2>\n" : "Click a trace to see its waterfall</h2>\n")
        .append("<iframe id=\"waterfall-frame\" title=\"step waterfall\" sandbox=\"allow-scripts\"></iframe>\n")
        .append("</section>\n<section class=\"samples\">\n<h2 id=\"samples-title\">Sample completions</h2>\n")
        .append("<p id=\"samples-note\">").append(samples.isEmpty() ? "This run kept no samples (samples.jsonl)."
            : "Click a step to see the completions it kept (telemetry.samples_per_step).")
        .append("</p>\n<table id=\"samples\"><thead><tr><th>group</th><th>#</th><th>prompt</th><th>completion</th>")
        .append("<th>answer</th><th>reward</th><th>components</th><th>tokens</th></tr></thead><tbody></tbody>")
        .append("</table>\n</section>\n</main>\n");
    if (!problems.isEmpty()) {
      h.append("<section class=\"problems\"><h2>Unread input</h2><ul>\n");
      problems.stream().limit(50).forEach(p -> h.append("<li>").append(Fmt.html(p)).append("</li>\n"));
      h.append("</ul></section>\n");
    }
    h.append("<script type=\"application/json\" id=\"report-data\">").append(Fmt.scriptJson(write(data)))
        .append("</script>\n");
    HtmlWaterfall waterfall = new HtmlWaterfall();
    List<StepView> views = run.steps();
    for (StepView v : views.subList(Math.max(0, views.size() - maxWaterfalls), views.size())) {
      // gzip + base64: a waterfall page compresses about tenfold, and the page inflates it on click
      h.append("<script type=\"application/gzip+base64\" class=\"waterfall-doc\" data-step=\"").append(v.step())
          .append("\">").append(gzipBase64(waterfall.render(v, run))).append("</script>\n");
    }
    for (int i = 0; i < run.startups().size() && maxWaterfalls > 0; i++) {
      h.append("<script type=\"application/gzip+base64\" class=\"waterfall-doc startup-doc\" data-step=\"s")
          .append(i + 1).append("\">").append(gzipBase64(waterfall.render(run.startups().get(i), run)))
          .append("</script>\n");
    }
    for (int i = 0; i < Math.min(traces.size(), maxWaterfalls); i++) {
      h.append("<script type=\"application/gzip+base64\" class=\"waterfall-doc\" data-step=\"t").append(i + 1)
          .append("\">").append(gzipBase64(waterfall.render(traces.get(i), run))).append("</script>\n");
    }
    h.append("<script>\n").append(WaterfallAssets.read("report.js", "</script")).append("</script>\n")
        .append("</body>\n</html>\n");
    return h.toString();
  }

  /** The report's data: the run, a row per step (with goodput seconds from its spans), the engine series. */
  ObjectNode data() {
    ObjectNode root = NODES.objectNode();
    ObjectNode r = root.putObject("run");
    r.put("id", runId);
    if (summary != null) {
      r.put("mode", summary.mode());
      r.put("status", summary.status().jsonName());
      r.put("started", summary.started().toString());
      r.put("finished", summary.finished().toString());
      if (!summary.versions().isEmpty()) {
        ObjectNode versions = r.putObject("versions");
        summary.versions().forEach(versions::put);
      }
    } else if (!steps.isEmpty()) {
      r.put("mode", steps.get(0).mode());
    }
    Map<String, StepView> byTrace = new HashMap<>();
    Map<Long, StepView> byNumber = new HashMap<>();
    for (StepView v : run.steps()) {
      byTrace.putIfAbsent(v.traceId(), v);
      byNumber.putIfAbsent(v.step(), v);
    }
    long runStart = run.startNanos();
    ArrayNode rows = root.putArray("steps");
    for (StepRecord s : steps) {
      ObjectNode o = rows.addObject();
      long step = s.step();
      StepView v = s.traceId() != null ? byTrace.get(s.traceId()) : null;
      if (v == null) {
        v = byNumber.get(step);
      }
      // the step's number as its spans carry it (what ravel trace and the waterfall call it)
      o.put("step", v != null ? v.step() : step);
      finite(o, "reward_mean", s.rewardMean());
      finite(o, "reward_std", s.rewardStd());
      finite(o, "kl", s.kl());
      finite(o, "loss", s.loss());
      finite(o, "clip_fraction", s.clipFraction());
      finite(o, "step_s", s.stepSeconds());
      finite(o, "tokens_per_s", s.tokensPerSecond());
      o.put("trajectories", s.trajectories());
      o.put("dropped", s.droppedForAge());
      if (s.eval() != null) {
        finite(o, "eval_reward", s.eval().reward());
        finite(o, "eval_accuracy", s.eval().accuracy());
      }
      if (s.completions() != null) {
        finite(o, "length_mean", s.completions().meanTokens());
        o.put("length_max", s.completions().maxTokens());
        o.put("clipped", s.completions().clipped());
      }
      if (s.lag() != null) {
        finite(o, "lag_mean", s.lag().meanAge());
        o.put("lag_max", s.lag().maxAge());
        o.put("buffer_depth", s.lag().bufferDepth());
        o.put("in_flight", s.lag().inFlight());
        ObjectNode ages = o.putObject("lag_ages");
        s.lag().ages().forEach((age, n) -> ages.put(Integer.toString(age), n));
      }
      if (s.rewards() != null) {
        ObjectNode c = o.putObject("reward_components");
        s.rewards().components().forEach((k, x) -> {
          if (Double.isFinite(x)) {
            c.put(k, x);
          }
        });
        o.put("reward_failed", s.rewards().failed());
      }
      if (s.update() != null) {
        StepRecord.Update u = s.update();
        finite(o, "grad_norm", u.gradNorm());
        finite(o, "learning_rate", u.learningRate());
        finite(o, "entropy", u.entropy());
        finite(o, "clip_low", u.clipLow());
        finite(o, "clip_high", u.clipHigh());
        finite(o, "clip_dual", u.clipDual());
        finite(o, "ratio_mean", u.ratioMean());
        finite(o, "ratio_max", u.ratioMax());
        o.put("zero_advantage_groups", u.zeroAdvantageGroups());
        o.put("epochs", u.epochs());
      }
      if (s.engine() != null) { // the engines over the step (one point per step)
        StepRecord.Engine e = s.engine();
        o.put("engine_requests", e.requests());
        o.put("engine_preemptions", e.preemptions());
        if (e.queueTimeMean() != null) {
          finite(o, "engine_queue_s", e.queueTimeMean());
        }
        if (e.runningMean() != null) {
          finite(o, "engine_running", e.runningMean());
        }
        if (e.waitingMean() != null) {
          finite(o, "engine_waiting", e.waitingMean());
        }
        if (e.kvUsageMean() != null) {
          finite(o, "engine_kv", e.kvUsageMean());
        }
      }
      ObjectNode phases = o.putObject("phases");
      s.phases().forEach(phases::put);
      if (v != null) {
        double wall = v.durationNanos() / 1e9;
        Goodput g = v.goodput();
        ObjectNode gp = o.putObject("goodput");
        gp.put("productive", g.productive() * wall);
        gp.put("overhead", g.overhead() * wall);
        gp.put("idle", g.idle() * wall);
        gp.put("wasted", g.wasted() * wall);
        o.put("spans", v.spanCount());
        o.put("trace_id", v.traceId());
        o.put("start_s", runStart == 0 ? 0 : (v.startNanos() - runStart) / 1e9);
        refit(v, o);
      }
    }
    if (steps.isEmpty()) { // spans but no step log: the steps as the spans tell them
      for (StepView v : run.steps()) {
        ObjectNode o = rows.addObject();
        o.put("step", v.step());
        o.put("step_s", v.durationNanos() / 1e9);
        o.put("spans", v.spanCount());
        o.put("trace_id", v.traceId());
      }
    }
    ArrayNode stages = root.putArray("refit_stages");
    REFIT_STAGES.forEach(stages::add);
    ObjectNode kept = root.putObject("samples");
    for (dev.ravel.telemetry.runs.SampleRecord x : samples) {
      ArrayNode at = kept.has(Integer.toString(x.step())) ? (ArrayNode) kept.get(Integer.toString(x.step()))
          : kept.putArray(Integer.toString(x.step()));
      ObjectNode o = at.addObject();
      o.put("group", x.group()).put("index", x.index()).put("prompt", x.prompt()).put("completion", x.completion())
          .put("answer", x.answer()).put("tokens", x.tokens());
      finite(o, "reward", x.reward());
      ObjectNode c = o.putObject("components");
      x.components().forEach((k, v) -> {
        if (Double.isFinite(v)) {
          c.put(k, v);
        }
      });
    }
    ObjectNode eng = root.putObject("engine");
    ArrayNode queue = eng.putArray("queue_time");
    ArrayNode pre = eng.putArray("preemptions");
    for (EngineSeries e : engine) {
      ObjectNode q = queue.addObject().put("name", e.process);
      ArrayNode qp = q.putArray("points");
      ObjectNode p = pre.addObject().put("name", e.process);
      ArrayNode pp = p.putArray("points");
      // cumulative since the process started: the first export is the first interval's total
      for (int i = 0; i < e.times.size(); i++) {
        double t = runStart == 0 ? e.times.get(i) / 1e9 : (e.times.get(i) - runStart) / 1e9;
        double dCount = e.queueCount.get(i) - (i == 0 ? 0 : e.queueCount.get(i - 1));
        double dSum = e.queueSum.get(i) - (i == 0 ? 0 : e.queueSum.get(i - 1));
        if (dCount > 0) {
          qp.addArray().add(t).add(dSum / dCount);
        }
        pp.addArray().add(t).add(Math.max(0, e.preemptions.get(i) - (i == 0 ? 0 : e.preemptions.get(i - 1))));
      }
    }
    return root;
  }

  /**
   * The step's refit by stage: {@code refit_s} the {@code rl.grpo.refit} span's seconds, {@code refit} each stage
   * under it with its longest span's seconds (workers fetch and load side by side: the longest is what the step
   * waited for) and {@code refit_bytes} the bytes that span moved. Nothing for a step without a refit.
   */
  private static void refit(StepView v, ObjectNode o) {
    ObjectNode stages = null;
    ObjectNode bytes = null;
    for (SpanNode n : v.nodes()) {
      if (!n.name().equals(dev.ravel.telemetry.spans.SpanNames.GRPO_REFIT)) {
        continue;
      }
      o.put("refit_s", n.span().durationNanos() / 1e9 + o.path("refit_s").asDouble(0));
      java.util.ArrayDeque<SpanNode> todo = new java.util.ArrayDeque<>(n.children());
      while (!todo.isEmpty()) {
        SpanNode c = todo.pop();
        todo.addAll(c.children());
        if (!REFIT_STAGES.contains(c.name())) {
          continue;
        }
        if (stages == null) {
          stages = o.putObject("refit");
          bytes = o.putObject("refit_bytes");
        }
        double s = c.span().durationNanos() / 1e9;
        if (!stages.has(c.name()) || stages.get(c.name()).asDouble() < s) {
          stages.put(c.name(), s);
          Object b = c.span().attributes().get(dev.ravel.telemetry.spans.RavelAttributes.REFIT_BYTES.getKey());
          if (b instanceof Number num) {
            bytes.put(c.name(), num.longValue());
          } else {
            bytes.remove(c.name());
          }
        }
      }
    }
  }

  /** {@code value} under {@code key}, left out when it is NaN or infinite (JSON has neither). */
  private static void finite(ObjectNode to, String key, double value) {
    if (Double.isFinite(value)) {
      to.put(key, value);
    }
  }

  /** Three significant digits (a learning rate of 1e-6 stays readable). */
  private static String sig(JsonNode v) {
    return v == null || !v.isNumber() ? "" : String.format(java.util.Locale.ROOT, "%.3g", v.asDouble());
  }

  private static String num(JsonNode v) {
    if (v == null || !v.isNumber()) {
      return "";
    }
    double d = v.asDouble();
    return Math.abs(d) >= 100 ? String.format(java.util.Locale.ROOT, "%.0f", d)
        : String.format(java.util.Locale.ROOT, "%.3f", d);
  }

  /**
   * The page's head, up to and with its {@code body} tag: no network ({@code default-src 'none'} and
   * {@code extraPolicy}), the report's CSS inline.
   */
  static void head(StringBuilder h, String title, String extraPolicy, String body) {
    h.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        .append("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ")
        .append("style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:").append(extraPolicy)
        .append("\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
        .append("<link rel=\"icon\" href=\"data:,\">\n")
        .append("<title>").append(Fmt.html(title)).append("</title>\n<style>\n")
        .append(WaterfallAssets.read("report.css", "</style")).append("</style>\n</head>\n").append(body);
  }

  static String td(String s) {
    return "<td>" + Fmt.html(s) + "</td>";
  }

  private static void meta(StringBuilder h, String cls, String label, String value) {
    if (value == null || value.isEmpty()) {
      return;
    }
    h.append("<dt>").append(Fmt.html(label)).append("</dt><dd class=\"").append(cls).append("\">")
        .append(Fmt.html(value)).append("</dd>\n");
  }

  static void chart(StringBuilder h, String id, String title) {
    h.append("<figure class=\"chart-box\"><figcaption>").append(Fmt.html(title)).append("</figcaption>")
        .append("<svg class=\"chart\" id=\"").append(id).append("\" viewBox=\"0 0 640 240\" role=\"img\"")
        .append(" aria-label=\"").append(Fmt.html(title)).append("\"></svg></figure>\n");
  }

  private static String gzipBase64(String ascii) {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream(ascii.length() / 6);
    try (java.util.zip.GZIPOutputStream z = new java.util.zip.GZIPOutputStream(bytes)) {
      z.write(ascii.getBytes(StandardCharsets.US_ASCII));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return java.util.Base64.getEncoder().encodeToString(bytes.toByteArray());
  }

  static String write(JsonNode n) {
    try {
      return JSON.writeValueAsString(n);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Each line of {@code file} as {@code parse} reads it; a line it rejects is a problem, not fatal. */
  private static <T> void forEachLine(Path file, List<String> problems, java.util.function.Function<String, T> parse,
      java.util.function.Consumer<T> out) {
    if (!Files.isRegularFile(file)) {
      return;
    }
    try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String line;
      int n = 0;
      while ((line = r.readLine()) != null) {
        n++;
        if (line.isBlank()) {
          continue;
        }
        T value;
        try {
          value = parse.apply(line);
        } catch (IllegalArgumentException | UncheckedIOException e) {
          problems.add(file + ":" + n + ": unreadable line"); // e.g. the torn last line of a killed run
          continue;
        }
        out.accept(value);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
  }

  /** One process's cumulative engine totals at each export: the series the charts turn into deltas. */
  private static final class EngineSeries {
    final String process;
    final List<Long> times = new ArrayList<>();
    final List<Double> queueSum = new ArrayList<>();
    final List<Double> queueCount = new ArrayList<>();
    final List<Double> preemptions = new ArrayList<>();

    EngineSeries(String process) {
      this.process = process;
    }
  }

  /** The engine series of every {@code metrics-*.jsonl} file that has engine metrics, a series per file. */
  private static List<EngineSeries> engineSeries(Path runDir, List<String> problems) {
    List<EngineSeries> out = new ArrayList<>();
    List<Path> files;
    try (Stream<Path> s = Files.list(runDir)) {
      files = s.filter(p -> p.getFileName().toString().startsWith(ProcessTelemetry.METRICS_FILE_PREFIX)
          && p.toString().endsWith(".jsonl"))
          .sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + runDir, e);
    }
    for (Path f : files) {
      String name = f.getFileName().toString();
      EngineSeries series = new EngineSeries(name.substring(ProcessTelemetry.METRICS_FILE_PREFIX.length(),
          name.length() - ".jsonl".length()));
      forEachLine(f, problems, RunReport::tree, line -> point(line, series));
      if (!series.times.isEmpty()) {
        out.add(series);
      }
    }
    return out;
  }

  /** Adds one export's totals (summed over attribute sets) when it carries engine metrics. */
  private static void point(JsonNode line, EngineSeries series) {
    double qSum = 0;
    double qCount = 0;
    double pre = 0;
    long time = 0;
    boolean engine = false;
    for (JsonNode rm : line.path("resourceMetrics")) {
      for (JsonNode sm : rm.path("scopeMetrics")) {
        for (JsonNode m : sm.path("metrics")) {
          String n = m.path("name").asText();
          if (n.equals(QUEUE_SUM[0])) {
            for (JsonNode dp : m.path("histogram").path("dataPoints")) {
              qSum += dp.path("sum").asDouble();
              qCount += dp.path("count").asDouble();
              time = Math.max(time, dp.path("timeUnixNano").asLong());
              engine = true;
            }
          } else if (n.equals(QUEUE_SUM[1]) || n.equals(QUEUE_COUNT_SERVER) || n.equals(PREEMPTIONS)) {
            for (JsonNode dp : m.path("sum").path("dataPoints")) {
              double v = dp.has("asDouble") ? dp.get("asDouble").asDouble() : dp.path("asInt").asDouble();
              if (n.equals(PREEMPTIONS)) {
                pre += v;
              } else if (n.equals(QUEUE_COUNT_SERVER)) {
                qCount += v;
              } else {
                qSum += v;
              }
              time = Math.max(time, dp.path("timeUnixNano").asLong());
              engine = true;
            }
          }
        }
      }
    }
    if (engine) {
      series.times.add(time);
      series.queueSum.add(qSum);
      series.queueCount.add(qCount);
      series.preemptions.add(pre);
    }
  }

  private static JsonNode tree(String line) {
    try {
      return JSON.readTree(line);
    } catch (IOException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
  }
}
