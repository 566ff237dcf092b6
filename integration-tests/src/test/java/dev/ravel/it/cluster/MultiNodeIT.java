package dev.ravel.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.NamespacedCluster;
import dev.ravel.it.support.PhaseHold;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
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
 * spans' resource ({@code ray.node.ip}). The loss tests run last: the first kills the second node's raylet, the
 * others each start a fresh cluster and kill every process of its second node.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
final class MultiNodeIT {
  private static final int STEPS = 5;
  private static final int PROMPTS = 8;
  private static final int GROUP = 4;
  private static final Pattern STEP_LINE = Pattern.compile("(?m)^step +(\\d+)/");

  /**
   * Node death is noticed in ~3 s (health check every second, 3 misses) rather than Ray's 15 s; the dashboard is not
   * on Ray's default port, so a driver that is not told where it is must find it in the GCS; each node declares one
   * GPU to Ray (a CPU machine: placement by GPUs is tested, the workers compute on the CPU).
   */
  private static final int DASHBOARD_PORT = 8266;
  private static final List<String> UP_OPTIONS = List.of("--cpus-per-node", "4", "--memory-mb", "4096",
      "--object-store-mb", "512", "--health-check-period-ms", "1000", "--health-check-failures", "3",
      "--dashboard-port", Integer.toString(DASHBOARD_PORT), "--gpus-per-node", "1");

  /** Python workers on a tiny model: one layer, 32 wide (the runs that check placement, not learning). */
  private static final List<String> TINY_PYTHON = List.of("generation.runtime=python", "trainer.runtime=python",
      "model.layers=1", "model.hidden=32", "model.heads=2");

  private static Path dir;
  private static NamespacedCluster cluster;

  @BeforeAll
  static void up() throws Exception {
    // short: Ray's socket paths under each node's temp folder must stay under 107 characters
    dir = Files.createDirectories(Path.of("/tmp", "rvmn-" + ProcessHandle.current().pid()));
    long t0 = System.nanoTime();
    cluster = NamespacedCluster.up(dir.resolve("c"), 2, UP_OPTIONS);
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
  void syncRun_generationOnTheSecondNodeTrainerOnTheHead_learnsWithOneConnectedTracePerStep() throws Exception {
    Path runs = dir.resolve("runs-sync");
    int steps = 30;
    // the example's whole workload: the policy learns (the same seed gives the same run on any placement)
    Run r = run(runs, "mn-sync", List.of(), "run.mode=sync", "grpo.steps=" + steps, "grpo.prompts_per_step=32",
        "grpo.group_size=8", "generation.resources=[ravel_node_1=0.01]", "trainer.resources=[ravel_node_0=0.01]");
    assertThat(r.exitCode()).as(r.output()).isZero();
    RunTraces traces = RunTraces.readDir(runs.resolve("mn-sync"));
    assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
    assertThat(traces.named("rl.grpo.step")).hasSize(steps);
    assertThat(nodesOf(traces, "rl.worker.generate")).containsExactly(cluster.nodeIp(1));
    assertThat(nodesOf(traces, "rl.trainer.train")).containsExactly(cluster.nodeIp(0));
    List<JsonNode> lines = assertFullBatches(runs.resolve("mn-sync"), steps, 32 * 8);
    double first = lines.subList(0, 3).stream().mapToDouble(n -> n.get("rewardMean").asDouble()).average().orElseThrow();
    double last = lines.subList(steps - 3, steps).stream().mapToDouble(n -> n.get("rewardMean").asDouble()).average()
        .orElseThrow();
    assertThat(last).as("mean reward of the last 3 steps against the first 3").isGreaterThan(first + 0.2);
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
    assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
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
  void pythonWorkers_strictSpreadPutsOneOnEachNodeAndTheTrainerOnTheHead() throws Exception {
    Path runs = dir.resolve("runs-python");
    int steps = 3;
    Run r = run(runs, "mn-python", List.of(), with(TINY_PYTHON, "run.mode=sync", "grpo.steps=" + steps,
        "generation.placement=strict_spread", "generation.num_cpus=1", "trainer.resources=[ravel_node_0=0.01]"));
    assertThat(r.exitCode()).as(r.output()).isZero();
    RunTraces traces = RunTraces.readDir(runs.resolve("mn-python"));
    assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
    assertThat(nodesOf(traces, "rl.worker.generate")).containsExactlyInAnyOrder(cluster.nodeIp(0), cluster.nodeIp(1));
    assertThat(nodesOf(traces, "rl.trainer.train")).containsExactly(cluster.nodeIp(0));
    // the Python processes' spans, written on both nodes into the one run folder, name their language
    assertThat(traces.named("rl.worker.generate")).allSatisfy(s ->
        assertThat(s.resourceAttribute(io.opentelemetry.api.common.AttributeKey.stringKey("telemetry.sdk.language")))
            .isEqualTo("python"));
    assertFullBatches(runs.resolve("mn-python"), steps);
  }

  @Test
  @Order(5)
  void pythonWorkers_oneGpuEach_landOnTheTwoNodesThatDeclareOne() throws Exception {
    Path runs = dir.resolve("runs-gpu");
    int steps = 2;
    // each node declares one GPU: two workers asking for one each cannot share a node
    Run r = run(runs, "mn-gpu", List.of(), with(TINY_PYTHON, "run.mode=sync", "grpo.steps=" + steps,
        "generation.num_gpus=1", "generation.device=auto"));
    assertThat(r.exitCode()).as(r.output()).isZero();
    RunTraces traces = RunTraces.readDir(runs.resolve("mn-gpu"));
    assertThat(nodesOf(traces, "rl.worker.generate")).containsExactlyInAnyOrder(cluster.nodeIp(0), cluster.nodeIp(1));
    assertFullBatches(runs.resolve("mn-gpu"), steps);
  }

  @Test
  @Order(6)
  void pythonTrainerGroup_twoRanksOnTwoNodes_trainTogetherAsOneTrainerDoes() throws Exception {
    Path runs = dir.resolve("runs-group");
    int steps = 2;
    int prompts = 16;
    int group = 8;
    // the Python example's model: its first batch already holds some reward, so the update is not empty
    List<String> common = List.of("run.mode=sync", "grpo.steps=" + steps, "generation.runtime=python",
        "trainer.runtime=python", "model.layers=2", "model.hidden=128", "model.heads=4", "generation.workers=1",
        "grpo.prompts_per_step=" + prompts, "grpo.group_size=" + group, "grpo.checkpoint_every=1");
    List<String> ranks2 = new ArrayList<>(common);
    ranks2.addAll(List.of("trainer.workers=2", "trainer.placement=strict_spread", "trainer.num_cpus=1"));
    Run r = run(runs, "mn-group", List.of(), ranks2.toArray(String[]::new));
    assertThat(r.exitCode()).as(r.output()).isZero();
    RunTraces traces = RunTraces.readDir(runs.resolve("mn-group"));
    assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
    // each step's policy training holds one rl.trainer.train per rank, the two ranks on the two nodes
    List<SpanRecord> training = traces.named("rl.grpo.policy_training");
    assertThat(training).hasSize(steps);
    for (SpanRecord t : training) {
      List<SpanRecord> ranks = traces.named("rl.trainer.train").stream()
          .filter(s -> s.traceId().equals(t.traceId()) && t.spanId().equals(s.parentSpanId())).toList();
      assertThat(ranks).hasSize(2);
      assertThat(ranks).extracting(s -> s.resourceAttribute(RavelAttributes.RAY_NODE_IP))
          .containsExactlyInAnyOrder(cluster.nodeIp(0), cluster.nodeIp(1));
    }
    assertThat(r.output()).contains("trainer group of 2 ranks formed at ");
    List<JsonNode> grouped = assertFullBatches(runs.resolve("mn-group"), steps, prompts * group);

    // the same run with one trainer: the same first batch (generated before any update) gives the same update
    Run alone = run(runs, "mn-alone", List.of(), common.toArray(String[]::new));
    assertThat(alone.exitCode()).as(alone.output()).isZero();
    JsonNode one = assertFullBatches(runs.resolve("mn-alone"), steps, prompts * group).get(0);
    JsonNode two = grouped.get(0);
    assertThat(one.get("update").get("gradNorm").asDouble()).as("the first update is not empty").isPositive();
    assertThat(two.get("rewardMean").asDouble()).isEqualTo(one.get("rewardMean").asDouble());
    assertThat(two.get("tokens").asLong()).isEqualTo(one.get("tokens").asLong());
    assertThat(two.get("loss").asDouble()).isCloseTo(one.get("loss").asDouble(), within(1e-5));
    assertThat(two.get("update").get("gradNorm").asDouble())
        .isCloseTo(one.get("update").get("gradNorm").asDouble(), org.assertj.core.data.Percentage.withPercentage(0.1));
    // fsdp2 (the default): each rank holds about half the parameters and half the AdamW state one trainer holds
    // (dim-0 shards of each tensor: within 10%; the optimizer's step counts are whole on every rank, a few bytes)
    SpanRecord lone = RunTraces.readDir(runs.resolve("mn-alone")).named("rl.trainer.train").get(0);
    long params = (Long) lone.attribute(RavelAttributes.TRAINER_PARAM_BYTES);
    long moments = (Long) lone.attribute(RavelAttributes.TRAINER_OPTIMIZER_BYTES);
    assertThat(params).isPositive();
    assertThat(moments).isPositive();
    assertThat(traces.named("rl.trainer.train")).hasSize(2 * steps).allSatisfy(s -> {
      assertThat(s.attribute(RavelAttributes.TRAINER_STRATEGY)).isEqualTo("fsdp2");
      assertThat(((Long) s.attribute(RavelAttributes.TRAINER_PARAM_BYTES)).doubleValue())
          .isCloseTo(params / 2.0, org.assertj.core.data.Percentage.withPercentage(10));
      assertThat(((Long) s.attribute(RavelAttributes.TRAINER_OPTIMIZER_BYTES)).doubleValue())
          .isCloseTo(moments / 2.0, org.assertj.core.data.Percentage.withPercentage(10));
    });
    // the whole weights gathered onto rank 0 once a version, inside each rank's update: rank 0 holds them after it
    // (at least the parameters' bytes: the tied head is a name of its own there), the other rank nothing
    for (SpanRecord t : traces.named("rl.trainer.train")) {
      List<SpanRecord> gather = traces.named(SpanNames.TRAINER_GATHER).stream()
          .filter(g -> t.spanId().equals(g.parentSpanId())).toList();
      assertThat(gather).hasSize(1);
    }
    assertThat(traces.named(SpanNames.TRAINER_GATHER)).hasSize(2 * steps)
        .extracting(g -> (Long) g.attribute(RavelAttributes.REFIT_BYTES))
        .filteredOn(b -> b > 0).hasSize(steps).allSatisfy(b -> assertThat(b).isGreaterThanOrEqualTo(params));
    System.out.printf("MultiNodeIT: trainer group: step 1 loss %s against %s alone, grad norm %s against %s;"
        + " parameter bytes a rank %s of %d, AdamW bytes a rank %s of %d%n", two.get("loss"), one.get("loss"),
        two.get("update").get("gradNorm"), one.get("update").get("gradNorm"),
        traces.named("rl.trainer.train").stream().map(s -> s.attribute(RavelAttributes.TRAINER_PARAM_BYTES)).toList(),
        params, traces.named("rl.trainer.train").stream()
            .map(s -> s.attribute(RavelAttributes.TRAINER_OPTIMIZER_BYTES)).toList(), moments);
  }

  @Test
  @Order(7)
  void loopbackAddressOfAHeadRegisteredUnderItsOwn_theDriverFindsItsNodeAndDashboardFromTheCluster()
      throws Exception {
    Path runs = dir.resolve("runs-loopback");
    int steps = 2;
    // not told where the dashboard is (cluster.env's RAVEL_RAY_DASHBOARD unset): it reads it from the GCS
    Run r = run(runs, "mn-loopback", List.of("env", "-u", "RAVEL_RAY_DASHBOARD"), List.of(), "run.mode=sync",
        "grpo.steps=" + steps, "cluster.address=127.0.0.1:" + NamespacedCluster.PORT);
    assertThat(r.exitCode()).as(r.output()).isZero();
    assertThat(r.output()).contains("the cluster's dashboard, as registered in its GCS: http://" + cluster.nodeIp(0)
        + ":" + DASHBOARD_PORT);
    assertFullBatches(runs.resolve("mn-loopback"), steps);
  }

  @Test
  @Order(8)
  void submitRun_toTheClustersHead_oneTraceFromSubmitWithWorkersOnBothNodes() throws Exception {
    Path runs = dir.resolve("runs-job");
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    Path out = dir.resolve("mn-job.out");
    List<String> cmd = List.of(home.resolve("bin/ravel").toString(), "submit", "run",
        home.resolve("examples/grpo-sync.yaml").toString(), "grpo.steps=3", "grpo.prompts_per_step=" + PROMPTS,
        "grpo.group_size=" + GROUP, "generation.workers=2", "generation.placement=strict_spread",
        "generation.num_cpus=1", "cluster.worker_heap_mb=256", "telemetry.preset=per_step",
        "telemetry.runs_dir=" + runs, "telemetry.run_id=mn-job", "--address", "http://" + cluster.nodeIp(0) + ":" + DASHBOARD_PORT,
        "--submission-id", "mn-job-" + ProcessHandle.current().pid(), "--wait");
    ProcessBuilder pb = new ProcessBuilder(cluster.command(List.of(), cmd)).redirectErrorStream(true)
        .redirectOutput(out.toFile());
    pb.environment().clear();
    pb.environment().putAll(cluster.env());
    Process p = pb.start();
    assertThat(p.waitFor(900, TimeUnit.SECONDS)).isTrue();
    String text = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(text).isZero();
    System.out.println("MultiNodeIT: mn-job: " + lastLine(text));
    RunTraces traces = RunTraces.readDir(runs.resolve("mn-job"));
    assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
    List<SpanRecord> submits = traces.named("rl.job.submit");
    List<SpanRecord> jobRuns = traces.named("rl.job.run");
    assertThat(submits).hasSize(1);
    assertThat(jobRuns).hasSize(1);
    assertThat(jobRuns.get(0).traceId()).isEqualTo(submits.get(0).traceId());
    assertThat(jobRuns.get(0).parentSpanId()).isEqualTo(submits.get(0).spanId());
    assertThat(nodesOf(traces, "rl.worker.generate")).containsExactlyInAnyOrder(cluster.nodeIp(0), cluster.nodeIp(1));
    assertFullBatches(runs.resolve("mn-job"), 3);
  }

  @Test
  @Order(9)
  void raylet_killedInAnAsyncRun_theCollectorsWorkerRestartsOnTheNodeLeftAndTheRunCompletes() throws Exception {
    int steps = 5;
    Path runs = dir.resolve("runs-raylet");
    Path out = dir.resolve("raylet.out");
    // the driver held before step 3's update (the collector generates on meanwhile), the raylet killed there
    PhaseHold hold = PhaseHold.arm(dir.resolve("gates-raylet"), 3, Phase.TRAINING);
    Process driver = start(runs, "mn-raylet", hold.envPrefix(), List.of(), out, "run.mode=async",
        "grpo.steps=" + steps, "generation.placement=spread", "generation.num_cpus=1",
        "trainer.resources=[ravel_node_0=0.01]");
    hold.awaitHeld(driver, out, 600);
    long raylet = cluster.killRaylet(1);
    assertThat(raylet).isPositive();
    hold.release();
    assertThat(driver.waitFor(900, TimeUnit.SECONDS)).isTrue();
    String text = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(driver.exitValue()).as(text).isZero();
    Path runDir = runs.resolve("mn-raylet");
    assertFullBatches(runDir, steps);
    JsonNode faults = new ObjectMapper().readTree(runDir.resolve("run.json").toFile()).get("faults");
    System.out.println("MultiNodeIT: raylet loss (async): run.json faults " + faults + "; " + lastLine(text));
    // a worker process outlives its raylet for a moment: a call in flight may still finish, the next one fails;
    // either way each failed call is issued again once and the worker that served on node 1 restarted
    assertThat(faults.get("restarts").asLong()).as(faults.toString()).isPositive();
    assertThat(faults.get("retried_calls").asLong()).isEqualTo(faults.get("failed_calls").asLong());
    assertThat(faults.get("dead_nodes")).as(faults.toString()).hasSize(1);
    assertThat(faults.get("dead_nodes").get(0).asText()).startsWith(cluster.nodeIp(1) + " (");
    RunTraces traces = RunTraces.readDir(runDir);
    assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
    assertThat(traces.named("rl.grpo.step")).hasSize(steps);
  }

  @Test
  @Order(10)
  void nodeLoss_everyProcessOfTheSecondNodeKilled_itsWorkerRestartsOnTheNodeLeftAndNothingIsLost()
      throws Exception {
    // a fresh cluster: the last test lost its second node
    cluster.close();
    cluster = null;
    cluster = NamespacedCluster.up(dir.resolve("c"), 2, UP_OPTIONS);
    int steps = 5;
    int prompts = 16;
    int group = 8;
    Path runs = dir.resolve("runs-loss");
    Path out = dir.resolve("loss.out");
    // the node killed while the driver holds before step 3's generation: its calls find the worker's node dead
    PhaseHold hold = PhaseHold.arm(dir.resolve("gates-loss"), 3, Phase.GENERATION);
    Process driver = start(runs, "mn-loss", hold.envPrefix(), List.of(), out, "run.mode=sync", "grpo.steps=" + steps,
        "grpo.prompts_per_step=" + prompts, "grpo.group_size=" + group, "grpo.max_new_tokens=16",
        "generation.ignore_eos=true", "generation.placement=spread", "generation.num_cpus=1",
        "trainer.resources=[ravel_node_0=0.01]", "cluster.max_restarts=3");
    hold.awaitHeld(driver, out, 600);
    long t0 = System.nanoTime();
    int killed = cluster.killNode(1);
    hold.release();
    assertThat(killed).as("processes of node 1").isGreaterThanOrEqualTo(3);
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
    assertFullBatches(runDir, steps, prompts * group);
    JsonNode faults = new ObjectMapper().readTree(runDir.resolve("run.json").toFile()).get("faults");
    System.out.println("MultiNodeIT: node loss: run.json faults " + faults + "; " + lastLine(text));
    // the worker on the dead node was restarted (the reward environment too, if Ray had placed it there) and each
    // lost call issued again once: step 3's generate call to it, with its requests (half the step's: whole groups
    // are dealt evenly to the two workers); every step still trained on its full batch
    assertThat(faults.get("restarts").asLong()).as(faults.toString()).isPositive();
    assertThat(faults.get("retried_calls").asLong()).isEqualTo(faults.get("failed_calls").asLong());
    assertThat(faults.get("retried_requests").asLong()).as(faults.toString()).isEqualTo((long) prompts * group / 2);
    assertThat(faults.get("dead_nodes").get(0).asText()).startsWith(cluster.nodeIp(1) + " (");
    RunTraces traces = RunTraces.readDir(runDir);
    assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
    assertThat(traces.named("rl.grpo.step")).hasSize(steps);
    // the failed call is in the trace, and after the loss every worker serves from the head's node
    List<SpanRecord> failed = traces.named("rl.fault.failed_call");
    assertThat(failed).hasSize(faults.get("failed_calls").asInt());
    System.out.println("MultiNodeIT: node loss: failed call: " + failed.get(0).statusMessage());
    // each names the node its dead process ran on, and its retry that the node died
    assertThat(failed).allSatisfy(f -> assertThat(f.attribute(RavelAttributes.FAULT_NODE)).isEqualTo(cluster.nodeIp(1)));
    assertThat(traces.named("rl.fault.retry")).hasSize(faults.get("retried_calls").asInt())
        .allSatisfy(r -> assertThat(r.attribute(RavelAttributes.FAULT_NODE_DEAD)).isEqualTo(true));
    long lastStep = steps;
    Set<Object> late = traces.named("rl.worker.generate").stream().filter(s -> stepOf(traces, s) == lastStep)
        .map(s -> s.resourceAttribute(RavelAttributes.RAY_NODE_IP)).collect(Collectors.toSet());
    assertThat(late).containsExactly(cluster.nodeIp(0));
  }

  @Test
  @Order(11)
  void trainerRankLoss_itsNodeKilled_theRunStopsNamingTheRankAndResumesOnTheNodeLeft() throws Exception {
    cluster.close(); // a fresh cluster: the last test lost its second node
    cluster = null;
    cluster = NamespacedCluster.up(dir.resolve("c"), 2, UP_OPTIONS);
    int steps = 4;
    Path runs = dir.resolve("runs-rank");
    Path out = dir.resolve("rank.out");
    // generation on the head's node; the two trainer ranks one on each node; a checkpoint after every step
    List<String> config = List.of(with(TINY_PYTHON, "run.mode=sync", "grpo.steps=" + steps, "generation.workers=1",
        "generation.resources=[ravel_node_0=0.01]", "grpo.checkpoint_every=1"));
    List<String> grouped = new ArrayList<>(config);
    grouped.addAll(List.of("trainer.workers=2", "trainer.placement=strict_spread", "trainer.num_cpus=1"));
    // the node killed while the driver holds before step 3's update (the death in refit and log-probs: the
    // single-node cases of TrainerRankFaultsIT)
    PhaseHold hold = PhaseHold.arm(dir.resolve("gates-rank"), 3, Phase.TRAINING);
    Process driver = start(runs, "mn-rank", hold.envPrefix(), List.of(), out, grouped.toArray(String[]::new));
    hold.awaitHeld(driver, out, 600);
    assertThat(cluster.killNode(1)).as("processes of node 1").isPositive();
    hold.release();
    assertThat(driver.waitFor(900, TimeUnit.SECONDS)).isTrue();
    String text = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(driver.exitValue()).as(text).isNotZero();
    String line = text.lines().filter(l -> l.contains("the policy trainer's process died")).findFirst().orElseThrow(
        () -> new AssertionError("no line about the trainer:\n" + text));
    // rank 0 names the group's address on its node: the rank on node 1 is 0 when that is node 1's address
    int lost = text.contains("trainer group of 2 ranks formed at " + cluster.nodeIp(1) + ":") ? 0 : 1;
    assertThat(text).contains("trainer group of 2 ranks formed at ");
    assertThat(line).contains("step 3: the policy trainer's process died (rank " + lost + " of 2: ")
        .endsWith("the run can go on from its last checkpoint with --resume");
    System.out.println("MultiNodeIT: rank loss: " + line);
    int done = (int) Files.readAllLines(runs.resolve("mn-rank").resolve("steps.jsonl")).stream()
        .filter(l -> !l.isBlank()).count();
    assertThat(done).as("steps 1 and 2 ran whole, step 3 failed").isEqualTo(2);

    // go on, on the node left, with one trainer (the group's update is one trainer's)
    List<String> resumed = new ArrayList<>(config);
    resumed.addAll(List.of("--resume", "mn-rank"));
    Run r = run(runs, "mn-rank", List.of(), resumed.toArray(String[]::new));
    assertThat(r.exitCode()).as(r.output()).isZero();
    Path runDir = runs.resolve("mn-rank");
    assertFullBatches(runDir, steps);
    JsonNode summary = new ObjectMapper().readTree(runDir.resolve("run.json").toFile());
    assertThat(summary.get("resumed_after_step").asInt()).isEqualTo(2);
    RunTraces traces = RunTraces.readDir(runDir);
    Set<Object> late = traces.named("rl.trainer.train").stream().filter(s -> stepOf(traces, s) == steps)
        .map(s -> s.resourceAttribute(RavelAttributes.RAY_NODE_IP)).collect(Collectors.toSet());
    assertThat(late).containsExactly(cluster.nodeIp(0));
  }

  @Test
  @Order(12)
  void nodeLoss_strictSpreadLeavesNoNodeForTheWorker_theStepFailsAfterTheTimeoutNamingItAndItsNode()
      throws Exception {
    cluster.close(); // a fresh cluster: the last test lost its second node
    cluster = null;
    cluster = NamespacedCluster.up(dir.resolve("c"), 2, UP_OPTIONS);
    Path runs = dir.resolve("runs-stranded");
    Path out = dir.resolve("stranded.out");
    // one generation worker on each node, and no node to restart the second one on once its node is gone
    // the node killed while the driver holds before step 3's generation
    PhaseHold hold = PhaseHold.arm(dir.resolve("gates-stranded"), 3, Phase.GENERATION);
    Process driver = start(runs, "mn-stranded", hold.envPrefix(), List.of(), out, "run.mode=sync", "grpo.steps=5",
        "generation.placement=strict_spread", "generation.num_cpus=1", "trainer.resources=[ravel_node_0=0.01]",
        "cluster.node_loss_timeout_s=10");
    hold.awaitHeld(driver, out, 600);
    assertThat(cluster.killNode(1)).as("processes of node 1").isPositive();
    hold.release();
    assertThat(driver.waitFor(900, TimeUnit.SECONDS)).isTrue();
    String text = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(driver.exitValue()).as(text).isNotZero();
    String line = text.lines().filter(l -> l.contains("did not restart it within 10.0 s")).findFirst()
        .orElseThrow(() -> new AssertionError("no line about the stranded worker:\n" + text));
    assertThat(line).contains("generation_worker/").contains("(last on " + cluster.nodeIp(1) + ", now dead)")
        .contains("cluster.node_loss_timeout_s");
    System.out.println("MultiNodeIT: stranded worker: " + line);
  }

  private static String lastLine(String text) {
    List<String> lines = text.lines().filter(l -> !l.isBlank()).toList();
    return lines.stream().filter(l -> l.startsWith("run ")).reduce((a, b) -> b)
        .orElse(lines.isEmpty() ? "(no output)" : lines.get(lines.size() - 1));
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
  private static List<JsonNode> assertFullBatches(Path runDir, int steps) throws IOException {
    return assertFullBatches(runDir, steps, PROMPTS * GROUP);
  }

  private static List<JsonNode> assertFullBatches(Path runDir, int steps, int trajectories) throws IOException {
    ObjectMapper json = new ObjectMapper();
    List<JsonNode> lines = new ArrayList<>();
    for (String l : Files.readAllLines(runDir.resolve("steps.jsonl"), StandardCharsets.UTF_8)) {
      if (!l.isBlank()) {
        lines.add(json.readTree(l));
      }
    }
    assertThat(lines).extracting(n -> n.get("step").asInt()).containsExactlyElementsOf(
        java.util.stream.IntStream.rangeClosed(1, steps).boxed().toList());
    assertThat(lines).allSatisfy(n -> assertThat(n.get("trajectories").asInt()).isEqualTo(trajectories));
    return lines;
  }

  /** {@code base}'s overrides, then {@code more}. */
  private static String[] with(List<String> base, String... more) {
    List<String> all = new ArrayList<>(base);
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  private record Run(int exitCode, String output) {}

  private static Run run(Path runs, String runId, List<String> privateDirs, String... overrides) throws Exception {
    return run(runs, runId, List.of(), privateDirs, overrides);
  }

  /** As above, {@code bin/ravel} run under {@code prefix} (such as {@code env -u VAR}). */
  private static Run run(Path runs, String runId, List<String> prefix, List<String> privateDirs, String... overrides)
      throws Exception {
    Path out = dir.resolve(runId + ".out");
    long t0 = System.nanoTime();
    Process p = start(runs, runId, prefix, privateDirs, out, overrides);
    if (!p.waitFor(900, TimeUnit.SECONDS)) {
      p.destroy();
      p.waitFor(30, TimeUnit.SECONDS);
      throw new AssertionError(runId + " did not finish in 900 s:\n" + Files.readString(out, StandardCharsets.UTF_8));
    }
    String text = Files.readString(out, StandardCharsets.UTF_8);
    System.out.printf("MultiNodeIT: %s exited %d after %.1f s; %s%n", runId, p.exitValue(), (System.nanoTime() - t0) / 1e9,
        lastLine(text));
    return new Run(p.exitValue(), text);
  }

  private static Process start(Path runs, String runId, List<String> privateDirs, Path out, String... overrides)
      throws IOException {
    return start(runs, runId, List.of(), privateDirs, out, overrides);
  }

  private static Process start(Path runs, String runId, List<String> prefix, List<String> privateDirs, Path out,
      String... overrides) throws IOException {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    List<String> cmd = new ArrayList<>(prefix);
    cmd.addAll(List.of(home.resolve("bin/ravel").toString(), "run",
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
