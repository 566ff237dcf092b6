package dev.ravel.it.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.AsyncLinks;
import dev.ravel.it.support.GrpoRuns;
import dev.ravel.it.support.RunMetrics;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * 4,096 rollouts a step (512 prompts x 8) on a real Ray head: with every span group on and engine spans
 * sampled at 0.01 a step's trace stays within 100 spans plus its sampled engine spans, and the engine's
 * request counter counts every request; in async mode a step links to every call that produced one of its
 * trajectories at 4,096 trajectories a step (at 256 a step, GrpoPythonIT's async run checks the same over its 50
 * steps; at 12, GrpoAsyncIT).
 */
final class GrpoScaleIT {
  static final int STEPS = 2;
  static final int GROUP = 8;
  static final double RATIO = 0.01;

  @TempDir
  Path runs;

  @Test
  void sync4096_spansPerStepStayBoundedAndTheRequestCounterIsExact() throws IOException {
    int prompts = 512;
    GrpoRuns.Finished run = GrpoRuns.run(runs, "it-scale-sync", "run.mode=sync", "grpo.steps=" + STEPS,
        "grpo.prompts_per_step=" + prompts, "grpo.group_size=" + GROUP, "generation.workers=2",
        "generation.max_running_requests=512", "generation.kv_token_budget=16384", "telemetry.preset=all",
        "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=" + RATIO,
        "telemetry.engine_slow_request_ms=60000");
    int requests = STEPS * prompts * GROUP;

    assertThat(run.traces().problems()).isEmpty();
    List<SpanRecord> steps = run.traces().named("rl.grpo.step");
    assertThat(steps).hasSize(STEPS);
    long sampled = 0;
    for (SpanRecord step : steps) {
      List<SpanRecord> trace = run.traces().byTrace().get(step.traceId());
      long engine = trace.stream().filter(s -> s.name().equals("llm_request")).count();
      sampled += engine;
      // the engine's: each sampled request and its lifecycle children (llm_request.queued, .prefill, ...)
      long engineSpans = trace.stream().filter(s -> s.name().equals("llm_request")
          || s.name().startsWith("llm_request.")).count();
      assertThat(trace.size() - engineSpans).as("Ravel's spans in step %s", step.attributes().get("rl.step"))
          .isLessThanOrEqualTo(100);
    }
    // about 1% of the requests, 4 binomial sigma either way; none is lost from the counter
    double expected = requests * RATIO;
    double sigma = Math.sqrt(requests * RATIO * (1 - RATIO));
    assertThat((double) sampled).isBetween(expected - 4 * sigma, expected + 4 * sigma);
    assertThat(RunMetrics.counter(run.config().telemetry().runDir(), "generation_worker", "rl.engine.requests"))
        .isEqualTo(requests);
    assertThat(run.steps()).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(prompts * GROUP));
  }

  @Test
  void async4096_everyStepLinksToEveryProducerOfItsTrajectories() {
    int trajectories = 4096;
    int prompts = trajectories / GROUP;
    GrpoRuns.Finished run = GrpoRuns.run(runs, "it-scale-async-" + trajectories, "run.mode=async",
        "grpo.steps=" + STEPS, "grpo.prompts_per_step=" + prompts, "grpo.group_size=" + GROUP,
        "generation.workers=2", "generation.max_running_requests=512", "generation.kv_token_budget=16384",
        "grpo.max_trajectory_age_steps=1", "telemetry.preset=per_step");

    assertThat(run.traces().problems()).isEmpty();
    // batched calls: at most 4 per worker and step
    AsyncLinks.assertEveryStepLinksToEveryProducer(run.traces(), STEPS, trajectories, 2 * 4);
    assertThat(run.steps()).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(trajectories));
  }
}
