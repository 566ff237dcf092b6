package dev.ravel.driver.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.view.Intervals;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ravel bench}: the same GRPO workload with telemetry off, {@code per_step}, and {@code all} with
 * engine sampling 0.01, plus async {@code per_step}, interleaved round by round on one Ray head, each run
 * a separate driver process, after one unrecorded warm-up run. Reports step-time ratios against telemetry
 * off (from this one invocation),
 * spans and Ray calls per step, and async vs sync step time. The first step of each run (warm-up) is
 * left out.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
    description = "Benchmark telemetry overhead and async vs sync on one Ray head (interleaved runs).")
final class BenchCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "CONFIG", description = "Base run config (YAML).")
  Path configFile;

  @Parameters(index = "1..*", paramLabel = "KEY=VALUE", description = "Overrides for every run.")
  List<String> overrides = new ArrayList<>();

  @Option(names = "--rounds", defaultValue = "2", description = "Rounds of the variants (default ${DEFAULT-VALUE}).")
  int rounds;

  @Option(names = "--runs-dir", defaultValue = "runs/bench", description = "Where the runs go.")
  Path runsDir;

  @Option(names = "--json", paramLabel = "FILE",
      description = "Also write the result as JSON: per variant the step times of every round, their median, "
          + "spans and Ray calls per step; ratios paired round by round with 95% intervals.")
  Path json;

  private record Variant(String name, List<String> overrides) {}

  @Override
  public Integer call() throws Exception {
    List<Variant> variants = List.of(
        new Variant("off", List.of("run.mode=sync", "telemetry.enabled=false")),
        new Variant("per_step", List.of("run.mode=sync", "telemetry.preset=per_step", "telemetry.engine_tracing=false")),
        new Variant("all@0.01", List.of("run.mode=sync", "telemetry.preset=all", "telemetry.engine_tracing=true",
            "telemetry.engine_sample_ratio=0.01")),
        new Variant("async per_step", List.of("run.mode=async", "telemetry.preset=per_step",
            "telemetry.engine_tracing=false")),
        new Variant("async in-flight", List.of("run.mode=async", "telemetry.preset=per_step",
            "telemetry.engine_tracing=false", "generation.inflight_updates=true")));
    Map<String, List<double[]>> results = new LinkedHashMap<>();
    variants.forEach(v -> results.put(v.name(), new ArrayList<>()));
    RayHome home = RayHome.locate(System.getenv());
    try (LocalRayHead head = LocalRayHead.builder(home).dashboard(false).start()) {
      // a first run on a fresh head pays for warming it up: run one, record nothing
      System.out.print("warm-up run ... ");
      System.out.flush();
      runOnce(head, "bench-warmup-" + System.currentTimeMillis() % 100000, variants.get(0).overrides());
      System.out.println("done");
      for (int r = 0; r < rounds; r++) {
        List<Variant> order = new ArrayList<>(variants);
        if (r % 2 == 1) {
          java.util.Collections.reverse(order);
        }
        for (Variant v : order) {
          String runId = "bench-" + v.name().replaceAll("[^a-z0-9]+", "-") + "-r" + r + "-" + System.currentTimeMillis() % 100000;
          System.out.printf("round %d: %-15s ... ", r + 1, v.name());
          System.out.flush();
          double[] m = runOnce(head, runId, v.overrides());
          results.get(v.name()).add(m);
          System.out.printf("%.3f s/step, %.0f spans/step, %.1f Ray calls/step%n", m[0], m[1], m[2]);
        }
      }
    }
    double off = mean(results.get("off"), 0);
    double sync = mean(results.get("per_step"), 0);
    System.out.println();
    System.out.println("| variant | step time (s) | ratio to off | spans/step | Ray calls/step |");
    System.out.println("|---|---|---|---|---|");
    for (Variant v : variants) {
      List<double[]> rs = results.get(v.name());
      System.out.printf("| %s | %.3f | %.3f | %.0f | %.1f |%n", v.name(), mean(rs, 0), mean(rs, 0) / off,
          mean(rs, 1), mean(rs, 2));
    }
    System.out.printf("%nasync vs sync step time (per_step): %.3f%n", mean(results.get("async per_step"), 0) / sync);
    List<double[]> async = results.get("async per_step");
    System.out.printf("async step time / max(generation busy %.3f s, training busy %.3f s) per step: %.3f%n",
        mean(async, 3), mean(async, 4), busyRatio(async));
    List<double[]> inflight = results.get("async in-flight");
    System.out.printf("async with in-flight updates vs async (step time): %.3f; its step time / max(busy): %.3f%n",
        mean(inflight, 0) / mean(async, 0), busyRatio(inflight));
    if (json != null) {
      writeJson(results);
      System.out.println("wrote " + json.toAbsolutePath());
    }
    return 0;
  }

  private void writeJson(Map<String, List<double[]>> results) throws IOException {
    Map<String, Object> root = new LinkedHashMap<>();
    Map<String, Object> vs = new LinkedHashMap<>();
    results.forEach((name, rs) -> {
      Map<String, Object> v = new LinkedHashMap<>();
      List<Double> steps = rs.stream().map(a -> a[0]).toList();
      v.put("step_s", steps);
      v.put("median_s", BenchStats.median(steps));
      v.put("spans_per_step", mean(rs, 1));
      v.put("ray_calls_per_step", mean(rs, 2));
      v.put("generation_busy_s_per_step", rs.stream().map(a -> a[3]).toList());
      v.put("training_busy_s_per_step", rs.stream().map(a -> a[4]).toList());
      vs.put(name, v);
    });
    root.put("variants", vs);
    Map<String, Object> ratios = new LinkedHashMap<>();
    ratios.put("async_over_sync", ratioJson(results, "async per_step", "per_step"));
    ratios.put("per_step_over_off", ratioJson(results, "per_step", "off"));
    ratios.put("all_over_off", ratioJson(results, "all@0.01", "off"));
    ratios.put("inflight_over_async", ratioJson(results, "async in-flight", "async per_step"));
    Map<String, Object> busy = new LinkedHashMap<>();
    busy.put("value", busyRatio(results.get("async per_step")));
    busy.put("per_round", results.get("async per_step").stream().map(a -> a[0] / Math.max(a[3], a[4])).toList());
    ratios.put("async_over_max_busy", busy);
    root.put("ratios", ratios);
    root.put("rounds", rounds);
    root.put("config", configFile.toString());
    root.put("overrides", overrides);
    root.put("cores", Runtime.getRuntime().availableProcessors());
    if (json.toAbsolutePath().getParent() != null) {
      Files.createDirectories(json.toAbsolutePath().getParent());
    }
    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(json.toFile(), root);
  }

  private static Map<String, Object> ratioJson(Map<String, List<double[]>> results, String a, String b) {
    return BenchStats.ratio(results.get(a).stream().map(x -> x[0]).toList(),
        results.get(b).stream().map(x -> x[0]).toList()).json();
  }

  /** Runs one driver process; returns mean step seconds (steps 2..n), spans per step, Ray calls per step. */
  private double[] runOnce(LocalRayHead head, String runId, List<String> variant) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(DriverSession.ADD_OPENS);
    cmd.add("-Dravel.home=" + System.getProperty("ravel.home", "."));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(RavelCli.class.getName());
    cmd.add("run");
    cmd.add(configFile.toString());
    cmd.addAll(overrides);
    cmd.addAll(variant);
    cmd.add("telemetry.run_id=" + runId);
    cmd.add("telemetry.runs_dir=" + runsDir.toAbsolutePath());
    Path log = runsDir.toAbsolutePath().resolve(runId + ".log");
    Files.createDirectories(runsDir.toAbsolutePath());
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("RAY_ADDRESS", head.address());
    Process p = pb.start();
    if (!p.waitFor(30, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new IllegalStateException("run " + runId + " did not finish in 30 min; log: " + log);
    }
    if (p.exitValue() != 0) {
      throw new IllegalStateException("run " + runId + " failed (exit " + p.exitValue() + "); log: " + log);
    }
    Path runDir = runsDir.toAbsolutePath().resolve(runId);
    List<StepRecord> steps = RunRecord.read(runDir).orElseThrow(() -> new IllegalStateException("run " + runId
        + " wrote no " + RunRecord.FILE + "; log: " + log)).stepMetrics();
    double time = 0;
    double calls = 0;
    int n = 0;
    for (int i = 1; i < steps.size(); i++) {
      time += steps.get(i).stepSeconds();
      calls += steps.get(i).rayCalls();
      n++;
    }
    RunTraces traces = RunTraces.readDir(runDir);
    long spans = traces.spans().size();
    double[] busy = busyPerStep(traces.spans());
    return new double[] {time / Math.max(1, n), (double) spans / Math.max(1, steps.size()), calls / Math.max(1, n),
        busy[0], busy[1]};
  }

  /**
   * Seconds per step that a generation worker (the mean over workers) and the trainer were busy, from their
   * spans ({@code rl.worker.generate[_async]}, {@code rl.trainer.logprobs}, {@code rl.trainer.train}) that
   * started from step 2's start on, over the steps from 2 on; NaN without spans (telemetry off).
   */
  static double[] busyPerStep(List<SpanRecord> spans) {
    List<SpanRecord> stepSpans = new ArrayList<>(spans.stream().filter(r -> r.name().equals(SpanNames.GRPO_STEP)).toList());
    if (stepSpans.size() < 2) {
      return new double[] {Double.NaN, Double.NaN};
    }
    stepSpans.sort(java.util.Comparator.comparingLong(SpanRecord::startNanos));
    long from = stepSpans.get(1).startNanos();
    long to = stepSpans.get(stepSpans.size() - 1).endNanos();
    // per process: the union of its calls' intervals (a worker serves several generate calls at once)
    Map<String, List<long[]>> gen = new java.util.HashMap<>();
    Map<String, List<long[]>> train = new java.util.HashMap<>();
    for (SpanRecord r : spans) {
      if (r.startNanos() < from || r.startNanos() > to) {
        continue;
      }
      if (r.name().equals(GENERATE) || r.name().equals(GENERATE_ASYNC)) {
        gen.computeIfAbsent(r.process(), k -> new ArrayList<>()).add(new long[] {r.startNanos(), r.endNanos()});
      } else if (r.name().equals(TRAINER_LOGPROBS) || r.name().equals(TRAINER_TRAIN)) {
        train.computeIfAbsent(r.process(), k -> new ArrayList<>()).add(new long[] {r.startNanos(), r.endNanos()});
      }
    }
    int n = stepSpans.size() - 1;
    return new double[] {busySeconds(gen) / n, busySeconds(train) / n};
  }

  /** Mean over processes of each one's busy time (the union of its intervals), in seconds. */
  private static double busySeconds(Map<String, List<long[]>> byProcess) {
    return byProcess.values().stream().mapToLong(Intervals::unionLength).average().orElse(0) / 1e9;
  }

  private static final String GENERATE = SpanNames.actorCall("worker", "generate");
  private static final String GENERATE_ASYNC = SpanNames.actorCall("worker", "generate_async");
  private static final String TRAINER_LOGPROBS = SpanNames.actorCall("trainer", "logprobs");
  private static final String TRAINER_TRAIN = SpanNames.actorCall("trainer", "train");

  /** Mean over rounds of step time / max(generation busy, training busy). */
  private static double busyRatio(List<double[]> rs) {
    return rs.stream().mapToDouble(a -> a[0] / Math.max(a[3], a[4])).average().orElse(Double.NaN);
  }

  private static double mean(List<double[]> rs, int i) {
    return rs.stream().mapToDouble(a -> a[i]).average().orElse(Double.NaN);
  }
}
