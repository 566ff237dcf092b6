package dev.ravel.driver.cli;

import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.view.Intervals;
import dev.ravel.telemetry.view.RunView;
import dev.ravel.telemetry.view.StepView;
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
  @Parameters(index = "0", arity = "0..1", paramLabel = "CONFIG", description = "Base run config (YAML).")
  Path configFile;

  @Parameters(index = "1..*", paramLabel = "KEY=VALUE", description = "Overrides for every run.")
  List<String> overrides = new ArrayList<>();

  @Option(names = "--rounds", description = "Rounds of the variants (default 2; with --suite 3).")
  Integer rounds;

  @Option(names = "--runs-dir", defaultValue = "runs/bench", description = "Where the runs go.")
  Path runsDir;

  @Option(names = "--json", paramLabel = "FILE",
      description = "Also write the result as JSON: per variant the step times of every round, their median, "
          + "spans and Ray calls per step; ratios paired round by round with 95% intervals.")
  Path json;

  @Option(names = "--variants", split = ",", paramLabel = "ID",
      description = "The variants to run, by id (default: all of them): off, per_step, all@0.01, all@1.0, async,"
          + " async_inflight.")
  List<String> variantIds = new ArrayList<>();

  @Option(names = "--suite", description = "Run every benchmark of docs/benchmarks.md, each short, and write one JSON"
      + " (--json, default bench-suite.json) with every target's value and interval; CONFIG is not given then.")
  boolean suite;

  @Option(names = "--docs", paramLabel = "FILE", description = "With --suite or --table-from: rewrite the targets"
      + " table of this file (docs/benchmarks.md) from the suite's JSON.")
  Path docs;

  @Option(names = "--table-from", paramLabel = "JSON", description = "Only print (and with --docs, write) the"
      + " targets table of a suite's JSON.")
  Path tableFrom;

  @Option(names = "--parts", split = ",", paramLabel = "PART", description = "With --suite: the parts to run"
      + " (default all): " + BenchSuite.PART_NAMES + ".")
  List<String> parts = new ArrayList<>();

  @Option(names = "--into", paramLabel = "JSON", description = "With --suite: merge the parts run into this earlier"
      + " suite's JSON (its other parts kept; the merged parts noted with when and on which commit they ran) and"
      + " write it back; --docs then renders the merged report.")
  Path into;

  @Option(names = "--vllm-venv", paramLabel = "DIR", description = "With --suite: the virtualenv with vLLM and Ravel's"
      + " plugin that the part vllm runs (default: system property " + BenchSuite.VLLM_VENV_PROPERTY + ", else "
      + BenchSuite.VLLM_VENV_ENV + "); scripts/setup-vllm-cpu.sh | tail -n 1 prints one.")
  Path vllmVenv;

  @picocli.CommandLine.Spec
  picocli.CommandLine.Model.CommandSpec spec;

  /** A variant of the workload: its id (for --variants), its display name and its config overrides. */
  record Variant(String id, String name, List<String> overrides) {}

  static final List<Variant> VARIANTS = List.of(
      new Variant("off", "off", List.of("run.mode=sync", "telemetry.enabled=false")),
      new Variant("per_step", "per_step", List.of("run.mode=sync", "telemetry.preset=per_step",
          "telemetry.engine_tracing=false")),
      new Variant("all@0.01", "all@0.01", List.of("run.mode=sync", "telemetry.preset=all",
          "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=0.01")),
      new Variant("all@1.0", "all@1.0", List.of("run.mode=sync", "telemetry.preset=all",
          "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=1.0")),
      new Variant("async", "async per_step", List.of("run.mode=async", "telemetry.preset=per_step",
          "telemetry.engine_tracing=false")),
      new Variant("async_inflight", "async in-flight", List.of("run.mode=async", "telemetry.preset=per_step",
          "telemetry.engine_tracing=false", "generation.inflight_updates=true")));

  /**
   * What one run measured, over its steps from 2 on (step 1 is warm-up): mean step seconds, spans and Ray calls
   * per step, generation and training busy seconds per step, CPU seconds per step of every process of the head
   * and the driver (steps 2 to n - 1, while every process is still up; NaN with fewer than 3 steps), and each
   * step's hop ratio and engine share ({@link StepView#hopRatio()}, {@link StepView#engineShare()}; NaN left out).
   */
  record RunMeasure(double stepSeconds, double spansPerStep, double callsPerStep, double generationBusy,
      double trainingBusy, double cpuSecondsPerStep, List<Double> hops, List<Double> engineShares) {}

  @Override
  public Integer call() throws Exception {
    if (tableFrom != null) {
      Map<String, Object> report = BenchSuite.read(tableFrom);
      String table = BenchSuite.table(report);
      System.out.print(table);
      if (docs != null) {
        BenchSuite.writeTable(docs, table);
        System.out.println("wrote the targets table of " + docs);
      }
      return 0;
    }
    if (into != null && !suite) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--into goes with --suite");
    }
    if (suite) {
      if (configFile != null) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--suite takes no CONFIG");
      }
      Path out = json != null ? json : Path.of("bench-suite.json");
      BenchSuite benchSuite;
      try {
        benchSuite = new BenchSuite(RayHome.locate(System.getenv()), runsDir, rounds == null ? 3 : rounds, parts,
            vllmVenv);
      } catch (IllegalArgumentException e) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage());
      }
      Map<String, Object> base = null;
      if (into != null) {
        try {
          base = BenchSuite.read(into);  // before the suite runs: a wrong --into is told at once
        } catch (IOException | IllegalArgumentException e) {
          throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--into: cannot read a bench suite's"
              + " JSON from " + into + ": " + e.getMessage());
        }
      }
      Map<String, Object> report = benchSuite.run(out);
      if (base != null && benchSuite.failed(report)) {
        System.out.println("a part failed: nothing merged into " + into);
      } else if (base != null) {
        report = BenchSuite.merge(base, report);
        BenchSuite.write(into, report);
        System.out.println("merged the parts run into " + into.toAbsolutePath());
      }
      String table = BenchSuite.table(report);
      System.out.println();
      System.out.print(table);
      System.out.println("wrote " + out.toAbsolutePath());
      if (docs != null && base != null && benchSuite.failed(report)) {
        // the table of a partial report would say "part not run" for every part kept in the base
        System.out.println("a part failed: the targets table of " + docs + " is left as it was");
      } else if (docs != null) {
        BenchSuite.writeTable(docs, table);
        System.out.println("wrote the targets table of " + docs);
      }
      return benchSuite.failed(report) ? 1 : 0;
    }
    if (configFile == null) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "CONFIG is missing (or give --suite)");
    }
    List<Variant> chosen;
    try {
      chosen = selected(variantIds);
    } catch (IllegalArgumentException e) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }
    Map<String, Object> report = measure(RayHome.locate(System.getenv()), configFile, overrides, chosen,
        rounds == null ? 2 : rounds, runsDir);
    if (json != null) {
      BenchSuite.write(json, report);
      System.out.println("wrote " + json.toAbsolutePath());
    }
    return 0;
  }

  /** The variants named by {@code ids}, in {@link #VARIANTS}' order; all of them when {@code ids} is empty. */
  static List<Variant> selected(List<String> ids) {
    for (String id : ids) {
      if (VARIANTS.stream().noneMatch(v -> v.id().equals(id))) {
        throw new IllegalArgumentException("--variants: unknown variant '" + id + "'; known: "
            + VARIANTS.stream().map(Variant::id).toList());
      }
    }
    return ids.isEmpty() ? VARIANTS : VARIANTS.stream().filter(v -> ids.contains(v.id())).toList();
  }

  /**
   * Runs {@code variants} of {@code config} interleaved for {@code rounds} rounds on a head of its own (after one
   * unrecorded warm-up run of the first), prints the table and returns the report (the JSON {@code --json} writes).
   */
  static Map<String, Object> measure(RayHome home, Path config, List<String> overrides, List<Variant> variants,
      int rounds, Path runsDir) throws IOException, InterruptedException {
    Map<String, List<RunMeasure>> results = new LinkedHashMap<>();
    variants.forEach(v -> results.put(v.name(), new ArrayList<>()));
    try (LocalRayHead head = LocalRayHead.builder(home).dashboard(false).start()) {
      // a first run on a fresh head pays for warming it up: run one, record nothing
      System.out.print("warm-up run (" + config + ") ... ");
      System.out.flush();
      runOnce(head, config, overrides, runsDir, "bench-warmup-" + System.currentTimeMillis() % 100000,
          variants.get(0).overrides());
      System.out.println("done");
      for (int r = 0; r < rounds; r++) {
        List<Variant> order = new ArrayList<>(variants);
        if (r % 2 == 1) {
          java.util.Collections.reverse(order);
        }
        for (Variant v : order) {
          String runId = "bench-" + v.name().replaceAll("[^a-z0-9]+", "-") + "-r" + r + "-"
              + System.currentTimeMillis() % 100000;
          System.out.printf("round %d: %-15s ... ", r + 1, v.name());
          System.out.flush();
          RunMeasure m = runOnce(head, config, overrides, runsDir, runId, v.overrides());
          results.get(v.name()).add(m);
          System.out.printf("%.3f s/step, %.3f CPU s/step, %.0f spans/step, %.1f Ray calls/step%n", m.stepSeconds(),
              m.cpuSecondsPerStep(), m.spansPerStep(), m.callsPerStep());
        }
      }
    }
    Map<String, Object> report = report(results, rounds, config, overrides);
    printTable(results, report);
    return report;
  }

  private static void printTable(Map<String, List<RunMeasure>> results, Map<String, Object> report) {
    List<RunMeasure> offRuns = results.get("off");
    double off = offRuns == null ? Double.NaN : mean(offRuns, RunMeasure::stepSeconds);
    double offCpu = offRuns == null ? Double.NaN : mean(offRuns, RunMeasure::cpuSecondsPerStep);
    System.out.println();
    System.out.println("| variant | step time (s) | ratio to off | CPU s/step | CPU ratio to off | spans/step | Ray calls/step |"
        + " hop (median) | engine share (median) |");
    System.out.println("|---|---|---|---|---|---|---|---|---|");
    results.forEach((name, rs) -> System.out.printf("| %s | %.3f | %.3f | %.3f | %.3f | %.0f | %.1f | %.3f | %.3f |%n",
        name, mean(rs, RunMeasure::stepSeconds), mean(rs, RunMeasure::stepSeconds) / off,
        mean(rs, RunMeasure::cpuSecondsPerStep), mean(rs, RunMeasure::cpuSecondsPerStep) / offCpu,
        mean(rs, RunMeasure::spansPerStep), mean(rs, RunMeasure::callsPerStep),
        BenchStats.median(all(rs, RunMeasure::hops)), BenchStats.median(all(rs, RunMeasure::engineShares))));
    System.out.println();
    @SuppressWarnings("unchecked")
    Map<String, Object> ratios = (Map<String, Object>) report.get("ratios");
    ratios.forEach((k, v) -> System.out.println(k + ": " + v));
  }

  /** The report of one invocation: per variant its per-round measures; ratios paired round by round. */
  static Map<String, Object> report(Map<String, List<RunMeasure>> results, int rounds, Path config,
      List<String> overrides) {
    Map<String, Object> root = new LinkedHashMap<>();
    Map<String, Object> vs = new LinkedHashMap<>();
    results.forEach((name, rs) -> {
      Map<String, Object> v = new LinkedHashMap<>();
      List<Double> steps = rs.stream().map(RunMeasure::stepSeconds).toList();
      v.put("step_s", steps);
      v.put("median_s", BenchStats.median(steps));
      v.put("cpu_s_per_step", rs.stream().map(RunMeasure::cpuSecondsPerStep).toList());
      v.put("spans_per_step", mean(rs, RunMeasure::spansPerStep));
      v.put("ray_calls_per_step", mean(rs, RunMeasure::callsPerStep));
      v.put("generation_busy_s_per_step", rs.stream().map(RunMeasure::generationBusy).toList());
      v.put("training_busy_s_per_step", rs.stream().map(RunMeasure::trainingBusy).toList());
      v.put("hop_per_step", all(rs, RunMeasure::hops));
      v.put("engine_share_per_step", all(rs, RunMeasure::engineShares));
      vs.put(name, v);
    });
    root.put("variants", vs);
    Map<String, Object> ratios = new LinkedHashMap<>();
    pair(ratios, "async_over_sync", results, "async per_step", "per_step", RunMeasure::stepSeconds);
    pair(ratios, "per_step_over_off", results, "per_step", "off", RunMeasure::stepSeconds);
    pair(ratios, "all_over_off", results, "all@0.01", "off", RunMeasure::stepSeconds);
    pair(ratios, "all_1_over_off", results, "all@1.0", "off", RunMeasure::stepSeconds);
    pair(ratios, "cpu_per_step_over_off", results, "per_step", "off", RunMeasure::cpuSecondsPerStep);
    pair(ratios, "cpu_all_1_over_off", results, "all@1.0", "off", RunMeasure::cpuSecondsPerStep);
    pair(ratios, "inflight_over_async", results, "async in-flight", "async per_step", RunMeasure::stepSeconds);
    busy(ratios, "async_over_max_busy", results.get("async per_step"));
    busy(ratios, "inflight_over_max_busy", results.get("async in-flight"));
    for (String name : List.of("all@1.0", "all@0.01")) {
      if (results.containsKey(name)) {
        ratios.put("hop", BenchStats.medianOf(all(results.get(name), RunMeasure::hops)).json());
        ratios.put("engine_share", BenchStats.medianOf(all(results.get(name), RunMeasure::engineShares)).json());
        ratios.put("hop_engine_variant", name);
        break;
      }
    }
    root.put("ratios", ratios);
    root.put("rounds", rounds);
    root.put("config", config.toString());
    root.put("overrides", overrides);
    root.put("cores", Runtime.getRuntime().availableProcessors());
    return root;
  }

  private static void pair(Map<String, Object> ratios, String key, Map<String, List<RunMeasure>> results, String a,
      String b, java.util.function.ToDoubleFunction<RunMeasure> f) {
    if (results.containsKey(a) && results.containsKey(b)) {
      ratios.put(key, BenchStats.ratio(results.get(a).stream().map(f::applyAsDouble).toList(),
          results.get(b).stream().map(f::applyAsDouble).toList()).json());
    }
  }

  private static void busy(Map<String, Object> ratios, String key, List<RunMeasure> rs) {
    if (rs != null) {
      List<Double> perRound = rs.stream().map(a -> a.stepSeconds() / Math.max(a.generationBusy(), a.trainingBusy()))
          .toList();
      ratios.put(key, BenchStats.ratio(perRound, perRound.stream().map(x -> 1.0).toList()).json());
    }
  }

  private static List<Double> all(List<RunMeasure> rs, java.util.function.Function<RunMeasure, List<Double>> f) {
    return rs.stream().flatMap(m -> f.apply(m).stream()).toList();
  }

  /**
   * Runs one driver process and measures it ({@link RunMeasure}). While it runs, the CPU time of the head's and the
   * driver's process trees is read each time a step ends (a new line in the run's steps file).
   */
  static RunMeasure runOnce(LocalRayHead head, Path config, List<String> overrides, Path runsDir, String runId,
      List<String> variant) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(DriverSession.ADD_OPENS);
    cmd.add("-Dravel.home=" + System.getProperty("ravel.home", "."));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(RavelCli.class.getName());
    cmd.add("run");
    cmd.add(config.toString());
    cmd.addAll(overrides);
    cmd.addAll(variant);
    cmd.add("telemetry.run_id=" + runId);
    cmd.add("telemetry.runs_dir=" + runsDir.toAbsolutePath());
    Path log = runsDir.toAbsolutePath().resolve(runId + ".log");
    Files.createDirectories(runsDir.toAbsolutePath());
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("RAY_ADDRESS", head.address());
    Path runDir = runsDir.toAbsolutePath().resolve(runId);
    Process p = pb.start();
    List<ProcessHandle> roots = new ArrayList<>();
    ProcessHandle.of(head.pid()).ifPresent(roots::add);
    roots.add(p.toHandle());
    Map<Integer, Double> cpuAtStep = new java.util.concurrent.ConcurrentHashMap<>();
    Thread watcher = new Thread(() -> watchSteps(p, runDir.resolve(RunTraces.STEP_LOG_FILE), roots, cpuAtStep),
        "bench-cpu-" + runId);
    watcher.setDaemon(true);
    watcher.start();
    if (!p.waitFor(30, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new IllegalStateException("run " + runId + " did not finish in 30 min; log: " + log);
    }
    watcher.join(10_000);
    if (p.exitValue() != 0) {
      throw new IllegalStateException("run " + runId + " failed (exit " + p.exitValue() + "); log: " + log);
    }
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
    int last = steps.size() - 1;
    Double cpuFrom = cpuAtStep.get(1);
    Double cpuTo = cpuAtStep.get(last);
    double cpu = steps.size() >= 3 && cpuFrom != null && cpuTo != null ? (cpuTo - cpuFrom) / (last - 1) : Double.NaN;
    RunTraces traces = RunTraces.readDir(runDir);
    long spans = traces.spans().size();
    double[] busy = busyPerStep(traces.spans());
    List<Double> hops = new ArrayList<>();
    List<Double> engine = new ArrayList<>();
    if (!traces.spans().isEmpty()) {
      for (StepView s : RunView.of(traces.spans()).steps()) {
        if (s.step() >= 2) {
          addFinite(hops, s.hopRatio());
          addFinite(engine, s.engineShare());
        }
      }
    }
    return new RunMeasure(time / Math.max(1, n), (double) spans / Math.max(1, steps.size()), calls / Math.max(1, n),
        busy[0], busy[1], cpu, hops, engine);
  }

  private static void addFinite(List<Double> to, double x) {
    if (Double.isFinite(x)) {
      to.add(x);
    }
  }

  /**
   * Until {@code driver} ends: each time the steps file gains lines, the CPU seconds of {@code roots}' trees are
   * recorded under the number of lines (steps ended). Polls every 10 ms (this thread's own CPU is the bench's, not
   * in the trees).
   */
  private static void watchSteps(Process driver, Path stepsFile, List<ProcessHandle> roots, Map<Integer, Double> out) {
    long size = -1;
    while (driver.isAlive()) {
      try {
        long now = Files.exists(stepsFile) ? Files.size(stepsFile) : -1;
        if (now != size) {
          size = now;
          int lines = (int) Files.readAllLines(stepsFile).stream().filter(l -> !l.isBlank()).count();
          double cpu = ProcessCpu.read(roots).seconds();
          out.putIfAbsent(lines, cpu);
        }
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (IOException | RuntimeException e) {
        // the file is being written or the run is ending: read again next time
        size = -1;
      }
    }
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

  private static double mean(List<RunMeasure> rs, java.util.function.ToDoubleFunction<RunMeasure> f) {
    return rs.stream().mapToDouble(f).average().orElse(Double.NaN);
  }
}
