package dev.ravel.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.grpo.GrpoRun;
import dev.ravel.driver.grpo.StepListener;
import dev.ravel.driver.grpo.StepMetrics;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.Procs;
import dev.ravel.it.support.RayWorkerNode;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import dev.ravel.workers.fault.FaultStats;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two Ray nodes on loopback: a head and a second node ({@code ray start --address}) with its own custom
 * resource; with {@code generation.placement: spread} one generation worker runs on each. Every step is one
 * connected trace with spans from both nodes; the second node's raylet is killed by its PID after step 3,
 * Ray places its worker's bundle on the head, the worker restarts there, and the run completes.
 */
final class TwoNodeIT {
  private static final int STEPS = 8;
  private static final int KILL_AFTER = 3;

  @TempDir
  Path tmp;

  @Test
  void twoNodes_oneWorkerOnEach_tracesSpanBothAndTheSecondNodesDeathIsSurvived() throws Exception {
    Map<String, String> env = TestEnv.clean();
    try (LocalRayHead head = LocalRayHead.builder(RayHome.locate(env)).environment(env).numCpus(8).start();
        RayWorkerNode node = RayWorkerNode.start(env, head.address(), 1, "{\"second_node\": 1}", tmp.resolve("node.log"))) {
      awaitRaylet(node);
      RunConfig config = RunConfig.load(null, List.of("cluster.address=" + head.address(), "grpo.steps=" + STEPS,
          "grpo.prompts_per_step=8", "grpo.group_size=4", "generation.workers=2", "generation.placement=spread",
          "telemetry.preset=per_step", "telemetry.run_id=it-two-nodes", "telemetry.runs_dir=" + tmp.resolve("runs")),
          env);
      DriverSession session = DriverSession.builder(config.telemetry()).env(env).address(head.address())
          .workerJvmOptions(List.of("-Xmx256m", "-XX:+UseSerialGC")).start();
      AtomicLong raylet = new AtomicLong(-1);
      StepListener listener = (m, total) -> {
        if (m.step() == KILL_AFTER) {
          try {
            raylet.set(node.rayletPid());
            ProcessHandle.of(raylet.get()).ifPresent(ProcessHandle::destroyForcibly); // SIGKILL to the raylet only
          } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
          }
        }
      };
      AtomicReference<GrpoRun> run = new AtomicReference<>();
      List<StepMetrics> steps;
      try {
        run.set(new GrpoRun(session, config, listener));
        steps = run.get().run();
      } finally {
        session.close();
      }
      assertThat(raylet.get()).isPositive();
      assertThat(Procs.alive(List.of(raylet.get()))).isEmpty();
      assertThat(steps).hasSize(STEPS).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(32));

      RunTraces traces = RunTraces.readDir(config.telemetry().runDir());
      TraceQuality quality = TraceQuality.of(traces.spans());
      assertThat(quality.connectedness()).isEqualTo(1.0);
      assertThat(traces.named("rl.grpo.step")).hasSizeGreaterThanOrEqualTo(STEPS);
      // before the kill the two workers served from two nodes
      List<SpanRecord> early = traces.named("rl.worker.generate").stream()
          .filter(s -> stepOf(traces, s) <= KILL_AFTER).toList();
      Set<Object> nodes = early.stream().map(s -> s.resourceAttribute(RavelAttributes.RAY_NODE_ID))
          .collect(Collectors.toSet());
      assertThat(nodes).as("nodes of the workers' spans in steps 1-" + KILL_AFTER).hasSize(2);
      // after it, both workers serve from the one node left, the restarted one in a new process
      Set<Object> late = traces.named("rl.worker.generate").stream().filter(s -> stepOf(traces, s) > KILL_AFTER + 1)
          .map(s -> s.resourceAttribute(RavelAttributes.RAY_NODE_ID)).collect(Collectors.toSet());
      assertThat(late).hasSize(1);
      FaultStats faults = run.get().faults();
      assertThat(faults.restarts()).isGreaterThanOrEqualTo(1);
    }
  }

  private static long stepOf(RunTraces traces, SpanRecord s) {
    SpanRecord root = traces.spans().stream().filter(x -> x.traceId().equals(s.traceId()) && x.isRoot())
        .findFirst().orElseThrow();
    return (Long) root.attribute(RavelAttributes.STEP);
  }

  private static void awaitRaylet(RayWorkerNode node) throws Exception {
    for (int i = 0; i < 300 && node.rayletPid() < 0; i++) {
      Thread.sleep(100);
    }
    assertThat(node.rayletPid()).as("the second node's raylet").isPositive();
    Thread.sleep(3000); // it registers with the GCS
  }
}
