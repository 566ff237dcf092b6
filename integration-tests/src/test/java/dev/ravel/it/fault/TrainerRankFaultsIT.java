package dev.ravel.it.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.grpo.GrpoRun;
import dev.ravel.driver.grpo.StepListener;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.process.ProcessIdentity;
import dev.ravel.telemetry.spans.Phase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A trainer rank's process killed with SIGKILL, by its PID, in a chosen phase of a chosen step of a real run (two
 * Python trainer ranks and a Python generation worker on a real Ray head): the run stops with one line naming the
 * step and the rank and pointing at {@code --resume}, whatever the step was doing. The moment is chosen, not hoped
 * for: the run's {@link dev.ravel.driver.grpo.PhaseHook} holds the driver just before the phase begins, the rank
 * is killed there and its exit waited on, and only then does the phase begin, so its first call to that rank finds
 * it dead however fast or loaded the machine is. The rank's death with its node, and the resume on the node left,
 * are {@code MultiNodeIT}'s.
 */
final class TrainerRankFaultsIT {
  /** The step whose phase the rank dies in (steps 1 and 2 ran whole). */
  private static final long STEP = 3;
  private static final long EXIT_BOUND_S = 60;

  @TempDir
  Path tmp;

  /**
   * Refit: rank 0's weights are what every worker loads (a rank's death there used to end the run with a raw
   * error from a worker's weight update). Log-probs: every rank takes the call. (A death before the update is
   * {@code MultiNodeIT}'s, with the node.)
   */
  @ParameterizedTest(name = "{0}, rank {1}")
  @CsvSource({"REFIT, 0", "LOGPROBS, 1"})
  void rankKilledInAPhase_theRunStopsInOneLineNamingTheStepAndTheRank(Phase phase, int rank) throws Exception {
    Path runs = tmp.resolve("runs");
    String runId = "rank-" + phase.label();
    RunConfig config = RunConfig.load(null, List.of("run.mode=sync", "grpo.steps=5", "generation.runtime=python",
        "trainer.runtime=python", "model.layers=1", "model.hidden=32", "model.heads=2", "grpo.prompts_per_step=4",
        "grpo.group_size=4", "generation.workers=1", "trainer.workers=2", "generation.num_cpus=0.5",
        "trainer.num_cpus=0.5",
        "telemetry.preset=per_step", "telemetry.engine_tracing=false", "telemetry.run_id=" + runId,
        "telemetry.runs_dir=" + runs), TestEnv.clean());
    DriverSession session = DriverSession.builder(config.telemetry()).env(SharedRayHead.env())
        .workerJvmOptions(List.of("-Xmx256m", "-XX:+UseSerialGC")).start();
    AtomicReference<GrpoRun> run = new AtomicReference<>();
    AtomicLong killed = new AtomicLong(-1);
    List<String> entered = new ArrayList<>();
    run.set(new GrpoRun(session, config, StepListener.NONE).phaseHook((step, p) -> {
      entered.add(step + " " + p.label());
      if (step == STEP && p == phase && killed.get() < 0) {
        List<Long> pids = run.get().trainerProcessIds();
        assertThat(pids).hasSize(2);
        ProcessIdentity target = ProcessIdentity.of(pids.get(rank)).orElseThrow();
        target.kill(); // SIGKILL to that process only (its start time checked)
        killed.set(pids.get(rank));
        awaitExit(pids.get(rank));
      }
    }));
    try {
      assertThatThrownBy(() -> run.get().run())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageStartingWith("step " + STEP + ": the policy trainer's process died (rank " + rank + " of 2: ")
          .hasMessageEndingWith("); the run can go on from its last checkpoint with --resume")
          .hasMessageNotContaining("\n");
    } finally {
      session.close();
    }
    assertThat(killed.get()).as("the rank was killed in step %d's %s (phases entered: %s)", STEP, phase, entered)
        .isPositive();
    // nothing ran after the phase the rank died in: the step stopped there
    assertThat(entered.get(entered.size() - 1)).isEqualTo(STEP + " " + phase.label());
    // steps 1 and 2 ran whole and were recorded once each; the failed step was not
    assertThat(Files.readAllLines(runs.resolve(runId).resolve("steps.jsonl"))).hasSize((int) STEP - 1);
  }

  /** Waits (bounded) until {@code pid}'s process has exited, so the phase's first call finds it gone. */
  private static void awaitExit(long pid) {
    ProcessHandle.of(pid).ifPresent(h -> {
      try {
        h.onExit().get(EXIT_BOUND_S, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new AssertionError("trainer pid " + pid + " did not exit within " + EXIT_BOUND_S + " s of SIGKILL", e);
      }
    });
  }
}
