package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.workers.actor.PythonWorkerException;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.python.PythonModel;
import dev.ravel.workers.python.PythonWorkers;
import dev.ravel.workers.trainer.LogProbSummary;
import dev.ravel.workers.trainer.PolicyTrainer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * On a real Ray head on loopback, the Java driver calls Ravel's Python trainer: the Python span is the child of
 * the Java caller's span in the same trace, and a Python exception reaches the caller naming its type and
 * message while the actor lives on.
 */
final class PythonActorIT {
  static final int GROUP = 4;

  @TempDir
  static Path runs;

  static TelemetryConfig config;
  static DriverSession session;
  static String callerTraceId;
  static String callerSpanId;
  static LogProbSummary summary;
  static Throwable failure;
  static LogProbSummary afterFailure;
  static RunTraces traces;

  @BeforeAll
  static void run() {
    config = TelemetryConfig.builder().runId("it-python-actor").runsDir(runs).build();
    session = DriverSession.builder(config).env(SharedRayHead.env()).start();
    PythonModel model = new PythonModel("gpt2", 14, 1, 16, 2, 12);
    GrpoConfig grpo = GrpoConfig.builder().groupSize(GROUP).promptsPerStep(1).build();
    RavelActorHandle<PolicyTrainer> trainer = session.pythonActor(PythonWorkers.POLICY_TRAINER,
        PythonWorkers.trainerSpec(model, 7, "cpu", grpo), PolicyTrainer.class).remote();
    List<Trajectory> batch = batch(GROUP);
    try (ScopedSpan s = session.spans().start(SpanGroup.STEP, "it.caller")) {
      callerTraceId = s.spanContext().getTraceId();
      callerSpanId = s.spanContext().getSpanId();
      summary = trainer.call(PolicyTrainer::logprobs, batch).get();
      try {
        trainer.call(PolicyTrainer::train, batch.subList(0, GROUP - 1)).get();
      } catch (Throwable t) {
        failure = t;
      }
      afterFailure = trainer.call(PolicyTrainer::logprobs, batch).get();
    }
    session.close();
    traces = RunTraces.readDir(config.runDir());
  }

  @AfterAll
  static void stop() {
    if (session != null) {
      session.close();
    }
  }

  /** One group of {@code n} completions of "1+2=" (tokens 1, 10, 2, 12), the last ending in EOS (13). */
  static List<Trajectory> batch(int n) {
    List<Trajectory> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(new Trajectory("s0-p0-" + i, new int[] {1, 10, 2, 12}, new int[] {3, 13}, new float[] {-2.6f, -2.6f},
          i == 0 ? 1.0 : 0.0, 0, i));
    }
    return out;
  }

  @Test
  void logprobs_pythonSpanIsTheChildOfTheJavaCallersSpan() {
    assertThat(traces.problems()).isEmpty();
    List<SpanRecord> calls = traces.named("rl.trainer.logprobs");
    assertThat(calls).hasSize(2).allSatisfy(s -> {
      assertThat(s.traceId()).isEqualTo(callerTraceId);
      assertThat(s.parentSpanId()).isEqualTo(callerSpanId);
      assertThat(s.kind()).isEqualTo(2); // SERVER
      assertThat(s.role()).isEqualTo("policy_trainer");
      assertThat(s.resource()).containsEntry("telemetry.sdk.language", "python")
          .containsEntry("rl.run.id", "it-python-actor").containsKeys("ray.actor.id", "process.pid");
      assertThat(s.attributes()).containsEntry("rl.actor.role", "policy_trainer");
    });
    SpanRecord caller = traces.byId().get(callerSpanId);
    assertThat(caller.role()).isEqualTo("driver");
    assertThat(caller.process()).isNotEqualTo(calls.get(0).process());
  }

  @Test
  void logprobs_returnsThePolicysLogProbsOfTheBatch() {
    // an untrained model over 14 tokens: per-token log-probs near log(1/14) = -2.64, policy = reference
    assertThat(summary.tokens()).isEqualTo(2L * GROUP);
    assertThat(summary.policy()).isBetween(-6.0, -0.5);
    assertThat(summary.reference()).isEqualTo(summary.policy());
    assertThat(summary.kl()).isEqualTo(0.0);
  }

  @Test
  void train_pythonExceptionReachesTheCallerByTypeAndMessageAndTheActorLives() {
    assertThat(failure).isInstanceOf(PythonWorkerException.class);
    PythonWorkerException e = (PythonWorkerException) failure;
    assertThat(e.pythonType()).isEqualTo("ValueError");
    assertThat(e.pythonMessage()).contains("group_size");
    assertThat(e.getMessage()).startsWith("ValueError: ").contains("PolicyTrainer.train");
    assertThat(afterFailure).isEqualTo(summary);
    SpanRecord failed = traces.named("rl.trainer.train").get(0);
    assertThat(failed.isError()).isTrue();
    assertThat(failed.parentSpanId()).isEqualTo(callerSpanId);
    assertThat(failed.events()).anySatisfy(ev -> {
      assertThat(ev.name()).isEqualTo("exception");
      assertThat(ev.attributes()).containsEntry("exception.type", "ValueError");
    });
  }

  @Test
  void close_thePythonActorReportsItsSpanCounts() {
    assertThat(session.actorStats()).hasSize(1);
    ExportStats stats = session.actorStats().values().iterator().next();
    assertThat(stats.ended()).isEqualTo(3);
    assertThat(stats.exported()).isEqualTo(stats.ended());
    assertThat(stats.failed()).isZero();
    assertThat(stats.dropped()).isZero();
  }
}
