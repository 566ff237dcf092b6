package dev.ravel.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.NamespacedCluster;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * GRPO on a real two-node Ray cluster: each node a {@code ray start} in a network namespace of its own with an
 * address of its own ({@code scripts/cluster.sh}, one cluster shared by the class), the driver ({@code bin/ravel
 * run}) inside the head's namespace as a user runs it. Which node every span's process ran on is read from the
 * spans' resource ({@code ray.node.ip}). The node-loss test kills the second node's raylet and runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
final class MultiNodeIT {
  private static final int STEPS = 5;
  private static final int PROMPTS = 8;
  private static final int GROUP = 4;
  private static final Pattern STEP_LINE = Pattern.compile("(?m)^step +(\\d+)/");

  private static Path dir;
  private static NamespacedCluster cluster;

  @BeforeAll
  static void up() throws Exception {
    // short: Ray's socket paths under each node's temp folder must stay under 107 characters
    dir = Files.createDirectories(Path.of("/tmp", "rvmn-" + ProcessHandle.current().pid()));
    long t0 = System.nanoTime();
    // node death is noticed in ~3 s (health check every second, 3 misses) rather than Ray's 15 s
    cluster = NamespacedCluster.up(dir.resolve("c"), 2, List.of("--cpus-per-node", "4", "--memory-mb", "4096",
        "--object-store-mb", "512", "--health-check-period-ms", "1000", "--health-check-failures", "3"));
    System.out.printf("MultiNodeIT: 2 nodes up in %.1f s%n", (System.nanoTime() - t0) / 1e9);
  }

  @AfterAll
  static void down() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
    String netns = new String(new ProcessBuilder("ip", "netns", "list").start().getInputStream().readAllBytes(),
        StandardCharsets.UTF_8);
    assertThat(netns).as("namespaces left by the cluster").doesNotContain("ravelit-");
    if (dir != null) {
      try (Stream<Path> s = Files.walk(dir)) {
        s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  @Test
  @Order(1)
  void syncRun_generationOnTheSecondNodeTrainerOnTheHead_oneConnectedTracePerStep() throws Exception {
    Path runs = dir.resolve("runs-sync");
    Run r = run(runs, "mn-sync", List.of(), "run.mode=sync", "generation.resources=[ravel_node_1=0.01]",
        "trainer.resources=[ravel_node_0=0.01]");
    assertThat(r.exitCode()).as(r.output()).isZero();
    RunTraces traces = RunTraces.readDir(runs.resolve("mn-sync"));
    assertThat(TraceQuality.of(traces.spans()).connectedness()).isEqualTo(1.0);
    assertThat(traces.named("rl.grpo.step")).hasSize(STEPS);
    assertThat(nodesOf(traces, "rl.worker.generate")).containsExactly(cluster.nodeIp(1));
    assertThat(nodesOf(traces, "rl.trainer.train")).containsExactly(cluster.nodeIp(0));
    assertFullBatches(runs.resolve("mn-sync"), STEPS);
    // ravel trace says which node each process ran on
    RavelCommand.Result trace = RavelCommand.run(cluster.env(), 120, "trace", "--runs-dir", runs.toString(), "--plain",
        "--width", "200", "--step", "2", "mn-sync");
    assertThat(trace.exitCode()).as(trace.stderr()).isZero();
    assertThat(trace.stdout()).contains(") on " + cluster.nodeIp(1)).contains(") on " + cluster.nodeIp(0));
  }

  @Test
  @Order(2)
  void asyncRun_strictSpreadPutsOneGenerationWorkerOnEachNode() throws Exception {
    Path runs = dir.resolve("runs-async");
    Run r = run(runs, "mn-async", List.of(), "run.mode=async", "generation.placement=strict_spread",
        "generation.num_cpus=1", "trainer.resources=[ravel_node_0=0.01]");
    assertThat(r.exitCode()).as(r.output()).isZero();
    RunTraces traces = RunTraces.readDir(runs.resolve("mn-async"));
    assertThat(TraceQuality.of(traces.spans()).connectedness()).isEqualTo(1.0);
    List<SpanRecord> generate = traces.spans().stream().filter(s -> s.name().startsWith("rl.worker.generate")).toList();
    assertThat(generate).isNotEmpty();
    // two workers, one per node: each node's generation spans come from one process
    Map<Object, Set<Object>> pidsByNode = generate.stream().collect(Collectors.groupingBy(
        s -> s.resourceAttribute(RavelAttributes.RAY_NODE_IP),
        Collectors.mapping(s -> s.resourceAttribute(RavelAttributes.PROCESS_PID), Collectors.toSet())));
    assertThat(pidsByNode).containsOnlyKeys(cluster.nodeIp(0), cluster.nodeIp(1));
    assertThat(pidsByNode.values()).allSatisfy(p -> assertThat(p).hasSize(1));
    assertFullBatches(runs.resolve("mn-async"), STEPS);
  }

  @Test
  @Order(3)
  void runsDirOnlyTheDriverSees_isRefusedAtStartInOneLine() throws Exception {
    Path hidden = dir.resolve("driver-only");
    Files.createDirectories(hidden);
    Path runs = hidden.resolve("runs");
    Run r = run(runs, "mn-hidden", List.of(hidden.toString()), "run.mode=sync");
    assertThat(r.exitCode()).as(r.output()).isNotZero();
    assertThat(r.output()).contains("telemetry.runs_dir: " + runs.resolve("mn-hidden") + " is not visible on 2 of the"
        + " cluster's 2 nodes: " + cluster.nodeIp(0) + " (no such file), " + cluster.nodeIp(1) + " (no such file)")
        .doesNotContain("\tat ");
    assertThat(runs).as("the driver's folder was its own tmpfs").doesNotExist();
  }

  @Test
  @Order(4)
  void nodeLoss_workerRestartsOnTheNodeLeftAndEveryStepTrainsOnItsFullBatch() throws Exception {
    int steps = 8;
    Path runs = dir.resolve("runs-loss");
    Path out = dir.resolve("loss.out");
    Process driver = start(runs, "mn-loss", List.of(), out, "run.mode=sync", "grpo.steps=" + steps,
        "generation.placement=spread", "generation.num_cpus=1", "trainer.resources=[ravel_node_0=0.01]",
        "cluster.max_restarts=3");
    RavelCommand.awaitOutput(out, driver, Pattern.compile("(?m)^step +3/"), "step   3/", 600);
    long t0 = System.nanoTime();
    long raylet = cluster.killRaylet(1);
    assertThat(raylet).isPositive();
    // Ray notices the node's death through its health check (1 s x 3 here)
    long deadAt = -1;
    for (int i = 0; i < 120 && deadAt < 0; i++) {
      if (cluster.status().exitCode() != 0) {
        deadAt = System.nanoTime();
      } else {
        Thread.sleep(500);
      }
    }
    assertThat(deadAt).as("cluster.sh status reports the dead node").isPositive();
    assertThat(driver.waitFor(900, TimeUnit.SECONDS)).isTrue();
    long endAt = System.nanoTime();
    String text = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(driver.exitValue()).as(text).isZero();
    System.out.printf("MultiNodeIT: node death seen by cluster.sh status %.1f s after the kill; run done %.1f s"
        + " after it%n", (deadAt - t0) / 1e9, (endAt - t0) / 1e9);

    Path runDir = runs.resolve("mn-loss");
    assertFullBatches(runDir, steps);
    JsonNode faults = new ObjectMapper().readTree(runDir.resolve("run.json").toFile()).get("faults");
    assertThat(faults.get("restarts").asLong()).as(faults.toString()).isPositive();
    assertThat(faults.get("retried_calls").asLong()).isEqualTo(faults.get("failed_calls").asLong());
    RunTraces traces = RunTraces.readDir(runDir);
    assertThat(TraceQuality.of(traces.spans()).connectedness()).isEqualTo(1.0);
    assertThat(traces.named("rl.grpo.step")).hasSize(steps);
    // the failed call is in the trace, and after the loss every worker serves from the head's node
    assertThat(traces.named("rl.fault.failed_call")).isNotEmpty();
    long lastStep = steps;
    Set<Object> late = traces.named("rl.worker.generate").stream().filter(s -> stepOf(traces, s) == lastStep)
        .map(s -> s.resourceAttribute(RavelAttributes.RAY_NODE_IP)).collect(Collectors.toSet());
    assertThat(late).containsExactly(cluster.nodeIp(0));
  }

  private static Set<Object> nodesOf(RunTraces traces, String name) {
    List<SpanRecord> spans = traces.named(name);
    assertThat(spans).as(name).isNotEmpty();
    return spans.stream().map(s -> s.resourceAttribute(RavelAttributes.RAY_NODE_IP)).collect(Collectors.toSet());
  }

  private static long stepOf(RunTraces traces, SpanRecord s) {
    SpanRecord root = traces.spans().stream().filter(x -> x.traceId().equals(s.traceId()) && x.isRoot())
        .findFirst().orElseThrow();
    return ((Number) root.attribute(RavelAttributes.STEP)).longValue();
  }

  /** Every step's line in steps.jsonl, each trained on the whole batch: nothing lost, nothing twice. */
  private static void assertFullBatches(Path runDir, int steps) throws IOException {
    ObjectMapper json = new ObjectMapper();
    List<JsonNode> lines = new ArrayList<>();
    for (String l : Files.readAllLines(runDir.resolve("steps.jsonl"), StandardCharsets.UTF_8)) {
      if (!l.isBlank()) {
        lines.add(json.readTree(l));
      }
    }
    assertThat(lines).extracting(n -> n.get("step").asInt()).containsExactlyElementsOf(
        java.util.stream.IntStream.rangeClosed(1, steps).boxed().toList());
    assertThat(lines).allSatisfy(n -> assertThat(n.get("trajectories").asInt()).isEqualTo(PROMPTS * GROUP));
  }

  private record Run(int exitCode, String output) {}

  private static Run run(Path runs, String runId, List<String> privateDirs, String... overrides) throws Exception {
    Path out = dir.resolve(runId + ".out");
    Process p = start(runs, runId, privateDirs, out, overrides);
    if (!p.waitFor(900, TimeUnit.SECONDS)) {
      p.destroy();
      p.waitFor(30, TimeUnit.SECONDS);
      throw new AssertionError(runId + " did not finish in 900 s:\n" + Files.readString(out, StandardCharsets.UTF_8));
    }
    return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
  }

  private static Process start(Path runs, String runId, List<String> privateDirs, Path out, String... overrides)
      throws IOException {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    List<String> cmd = new ArrayList<>(List.of(home.resolve("bin/ravel").toString(), "run",
        home.resolve("examples/grpo-sync.yaml").toString(), "grpo.steps=" + STEPS, "grpo.prompts_per_step=" + PROMPTS,
        "grpo.group_size=" + GROUP, "generation.workers=2", "cluster.worker_heap_mb=256", "telemetry.preset=per_step",
        "telemetry.runs_dir=" + runs, "telemetry.run_id=" + runId));
    cmd.addAll(List.of(overrides));
    ProcessBuilder pb = new ProcessBuilder(cluster.command(privateDirs, cmd)).redirectErrorStream(true)
        .redirectOutput(out.toFile());
    pb.environment().clear();
    pb.environment().putAll(cluster.env());
    return pb.start();
  }
}
