package dev.ravel.it.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.GrpoRuns;
import dev.ravel.it.support.RunMetrics;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Engine sampling at 0.1: about a tenth of the requests get an {@code llm_request} span (plus the
 * always-kept ones), while the engine's request counter, exported as a metric, counts every request.
 */
final class EngineSamplingIT {
  static final int STEPS = 4;
  static final int PROMPTS = 8;
  static final int GROUP = 8;
  static final int REQUESTS = STEPS * PROMPTS * GROUP;
  static final double RATIO = 0.1;

  @TempDir
  static Path runs;
  static GrpoRuns.Finished run;

  @BeforeAll
  static void run() {
    run = GrpoRuns.run(runs, "it-sampling", "run.mode=sync", "grpo.steps=" + STEPS,
        "grpo.prompts_per_step=" + PROMPTS, "grpo.group_size=" + GROUP, "generation.workers=2",
        "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=" + RATIO,
        "telemetry.engine_slow_request_ms=60000");
  }

  @Test
  void sampler_keepsAboutTheRatioPlusTheAlwaysKeptRequests() {
    List<SpanRecord> engine = run.traces().named("llm_request");
    long alwaysKept = engine.stream().filter(s -> s.isError()
        || ((Number) s.attributes().getOrDefault("rl.engine.preemptions", 0L)).longValue() > 0).count();
    double expected = REQUESTS * RATIO;
    double sigma = Math.sqrt(REQUESTS * RATIO * (1 - RATIO));
    // 4 sigma of the binomial: fails for a sampler that keeps everything, nothing, or the wrong share
    assertThat((double) engine.size() - alwaysKept).isBetween(expected - 4 * sigma, expected + 4 * sigma);
    assertThat(engine.size()).isLessThan(REQUESTS / 2);
  }

  @Test
  void metrics_requestCounterIsExactWhateverTheRatio() throws IOException {
    assertThat(RunMetrics.counter(run.config().telemetry().runDir(), "generation_worker", "rl.engine.requests"))
        .isEqualTo(REQUESTS);
  }

  @Test
  void rlSpans_areNeverSampledOut() {
    assertThat(run.traces().named("rl.grpo.step")).hasSize(STEPS);
    assertThat(run.traces().named("rl.worker.generate")).hasSize(STEPS * 2);
    assertThat(run.traces().named("rl.vllm.generate")).hasSize(STEPS);
  }
}
