package dev.ravel.driver.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.grpo.RunSummary;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.traces.RunTraces;
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
            "telemetry.engine_tracing=false")));
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
      vs.put(name, v);
    });
    root.put("variants", vs);
    Map<String, Object> ratios = new LinkedHashMap<>();
    ratios.put("async_over_sync", ratioJson(results, "async per_step", "per_step"));
    ratios.put("per_step_over_off", ratioJson(results, "per_step", "off"));
    ratios.put("all_over_off", ratioJson(results, "all@0.01", "off"));
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
    BenchStats.Ratio r = BenchStats.ratio(results.get(a).stream().map(x -> x[0]).toList(),
        results.get(b).stream().map(x -> x[0]).toList());
    Map<String, Object> o = new LinkedHashMap<>();
    o.put("value", r.value());
    o.put("ci95", java.util.Arrays.asList(r.low(), r.high()));
    o.put("per_round", r.perRound());
    return o;
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
    JsonNode summary = new ObjectMapper().readTree(runDir.resolve(RunSummary.FILE).toFile());
    JsonNode steps = summary.path("step_metrics");
    double time = 0;
    double calls = 0;
    int n = 0;
    for (int i = 1; i < steps.size(); i++) {
      time += steps.get(i).path("stepSeconds").asDouble();
      calls += steps.get(i).path("rayCalls").asDouble();
      n++;
    }
    long spans = RunTraces.readDir(runDir).spans().size();
    return new double[] {time / Math.max(1, n), (double) spans / Math.max(1, steps.size()), calls / Math.max(1, n)};
  }

  private static double mean(List<double[]> rs, int i) {
    return rs.stream().mapToDouble(a -> a[i]).average().orElse(Double.NaN);
  }
}
