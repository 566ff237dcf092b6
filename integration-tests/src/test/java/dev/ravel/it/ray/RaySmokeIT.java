package dev.ravel.it.ray;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.cluster.RayVersions;
import dev.ravel.driver.grpo.StepMetrics;
import dev.ravel.it.support.GrpoRuns;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.TraceQuality;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short sync and a short async GRPO run on the Ray this test JVM was given (failsafe runs it once per
 * Ray version: the default and the compat one), on that Ray's own jar, against a head of that Ray.
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

  private static void check(GrpoRuns.Finished run) {
    assertThat(run.steps()).hasSize(STEPS);
    assertThat(run.steps()).extracting(StepMetrics::trajectories).containsOnly(PROMPTS * GROUP);
    assertThat(run.traces().problems()).isEmpty();
    assertThat(run.traces().named(SpanNames.GRPO_STEP)).hasSize(STEPS);
    TraceQuality q = TraceQuality.of(run.traces().spans());
    assertThat(q.generationCoverage()).isEqualTo(1.0);
    assertThat(q.disconnected()).isEmpty();
  }
}
