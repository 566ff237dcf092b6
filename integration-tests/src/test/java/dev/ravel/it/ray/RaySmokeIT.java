package dev.ravel.it.ray;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.session.RayVersions;
import dev.ravel.driver.config.RunConfig;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.GrpoRuns;
import dev.ravel.it.support.OtherRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short sync and a short async GRPO run on the Ray this test JVM was given (failsafe runs it once per
 * Ray version: the default and the compat one), on that Ray's own jar, against a head of that Ray; and a
 * head of the other Ray ({@link OtherRayHead}: one per build, the other execution's shared head), which the driver
 * refuses at start.
 */
final class RaySmokeIT {
  private static final int STEPS = 3;
  private static final int PROMPTS = 4;
  private static final int GROUP = 2;

  @TempDir
  Path runs;

  @Test
  void driver_runsOnTheRayItWasAskedFor() {
    String asked = RayHome.locate(TestEnv.clean()).version();

    assertThat(RayVersions.driverVersion()).as("Ray release of " + RayVersions.runtimeJar()).contains(asked);
    assertThat(RayVersions.runtimeJar().orElseThrow().getFileName().toString()).isEqualTo("ray_dist.jar");
  }

  @Test
  void sync_stepsSucceedWithEveryTraceConnected() {
    check(GrpoRuns.run(runs, "smoke-sync", "run.mode=sync", "grpo.steps=" + STEPS,
        "grpo.prompts_per_step=" + PROMPTS, "grpo.group_size=" + GROUP, "generation.workers=2",
        "telemetry.preset=all", "telemetry.engine_sample_ratio=1.0"));
  }

  @Test
  void async_stepsSucceedWithEveryTraceConnected() {
    check(GrpoRuns.run(runs, "smoke-async", "run.mode=async", "grpo.steps=" + STEPS,
        "grpo.prompts_per_step=" + PROMPTS, "grpo.group_size=" + GROUP, "generation.workers=2",
        "telemetry.preset=all", "telemetry.engine_sample_ratio=1.0"));
  }

  @Test
  void driver_clusterOfTheOtherRayFailsAtStartNamingBothVersions() {
    Path otherVenv = Path.of(System.getProperty("ravel.ray.other.venv"));
    RayHome other = RayHome.locate(Map.of(RayHome.VENV_ENV, otherVenv.toString()));
    String otherVersion = RayHome.versionOfJar(other.rayJar()).orElseThrow();
    String mine = RayVersions.driverVersion().orElseThrow();
    assertThat(otherVersion).isNotEqualTo(mine);

    // the other Ray's shared head: the other Failsafe execution's, or started here and then theirs
    Map<String, String> env = new HashMap<>(TestEnv.clean());
    env.putAll(OtherRayHead.env(other, otherVersion));
    RunConfig config = RunConfig.load(null, List.of("telemetry.runs_dir=" + runs), env);

    assertThatThrownBy(() -> DriverSession.builder(config.telemetry()).env(env).start())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("runs Ray " + otherVersion)
        .hasMessageContaining("this driver runs Ray " + mine)
        .hasMessageContaining(RayHome.JAR_ENV);
  }

  private static void check(GrpoRuns.Finished run) {
    assertThat(run.steps()).hasSize(STEPS);
    assertThat(run.steps()).extracting(StepRecord::trajectories).containsOnly(PROMPTS * GROUP);
    assertThat(run.traces().problems()).isEmpty();
    assertThat(run.traces().named(SpanNames.GRPO_STEP)).hasSize(STEPS);
    TraceQuality q = TraceQuality.of(run.traces().spans());
    // the figures are over spans that exist: every trained completion's engine request (sampling at 1.0; async
    // may generate more than it trains), and the workers' calls on both roles
    assertThat(q.engineRequests()).hasSizeGreaterThanOrEqualTo(STEPS * PROMPTS * GROUP);
    assertThat(q.workerSpans()).anyMatch(s -> s.name().startsWith("rl.worker.generate")); // sync, and _async
    assertThat(run.traces().named("rl.trainer.train")).isNotEmpty();
    assertThat(q.generationCoverage()).hasValue(1.0);
    assertThat(q.connectedness()).hasValue(1.0);
    assertThat(q.disconnected()).isEmpty();
    startup(run, q);
  }

  /**
   * The run's start-up, one trace of its own: Ray joined, the actors by role, each worker's backend start and the
   * trainer's model load as children of their role's span (across the actor's creation), all in one waterfall.
   */
  private static void startup(GrpoRuns.Finished run, TraceQuality q) {
    List<SpanRecord> up = q.runStartupSpans();
    assertThat(run.traces().named(SpanNames.RUN_STARTUP)).singleElement().satisfies(root -> {
      assertThat(root.isRoot()).isTrue();
      assertThat(root.isError()).isFalse();
      // it ends before the first step starts
      assertThat(root.endNanos()).isLessThanOrEqualTo(run.traces().named(SpanNames.GRPO_STEP).stream()
          .mapToLong(SpanRecord::startNanos).min().orElseThrow());
    });
    assertThat(up).filteredOn(s -> s.name().equals(SpanNames.RUN_RAY)).singleElement()
        .satisfies(s -> assertThat(s.attributes()).containsEntry("rl.ray.head_started", false)); // the shared head
    assertThat(up).filteredOn(s -> s.name().equals(SpanNames.WORKER_START_BACKEND)).hasSize(2)
        .allSatisfy(s -> assertThat(q.parent(s)).hasValueSatisfying(p -> {
          assertThat(p.name()).isEqualTo(SpanNames.runActors("generation_worker"));
          assertThat(p.attributes()).containsEntry("rl.actor.role", "generation_worker");
          assertThat(s.role()).isEqualTo("generation_worker");
        }));
    assertThat(up).filteredOn(s -> s.name().equals(SpanNames.TRAINER_LOAD_MODEL)).singleElement()
        .satisfies(s -> assertThat(q.parent(s)).hasValueSatisfying(p ->
            assertThat(p.name()).isEqualTo(SpanNames.runActors("policy_trainer"))));
    dev.ravel.telemetry.view.RunView view = dev.ravel.telemetry.view.RunView.of(run.traces().spans());
    assertThat(view.startups()).singleElement().satisfies(v -> assertThat(v.spanCount()).isEqualTo(up.size()));
    assertThat(view.unconnected()).isEmpty();
  }
}
