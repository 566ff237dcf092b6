package dev.ravel.it.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.GrpoRuns;
import dev.ravel.it.support.RunMetrics;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * 4,096 rollouts a step (512 prompts x 8) on a real Ray head: with every span group on and engine spans
 * sampled at 0.01 a step's trace stays within 100 spans plus its sampled engine spans, and the engine's
 * request counter counts every request; in async mode a step links to every call that produced one of its
 * trajectories, at 256 and at 4,096 trajectories a step.
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

  @ParameterizedTest(name = "{0} trajectories a step")
  @ValueSource(ints = {256, 4096})
  void async_everyStepLinksToEveryProducerOfItsTrajectories(int trajectories) {
    int prompts = trajectories / GROUP;
    GrpoRuns.Finished run = GrpoRuns.run(runs, "it-scale-async-" + trajectories, "run.mode=async",
        "grpo.steps=" + STEPS, "grpo.prompts_per_step=" + prompts, "grpo.group_size=" + GROUP,
        "generation.workers=2", "generation.max_running_requests=512", "generation.kv_token_budget=16384",
        "grpo.max_trajectory_age_steps=1", "telemetry.preset=per_step");

    assertThat(run.traces().problems()).isEmpty();
    Map<String, SpanRecord> byId = run.traces().spans().stream()
        .collect(Collectors.toMap(SpanRecord::spanId, Function.identity(), (a, b) -> a));
    List<SpanRecord> steps = run.traces().named("rl.grpo.step");
    assertThat(steps).hasSize(STEPS);
    Set<String> linked = new HashSet<>();
    for (SpanRecord step : steps) {
      assertThat(step.links()).allSatisfy(l -> {
        SpanRecord producer = byId.get(l.spanId());
        assertThat(producer).as("link target %s", l.spanId()).isNotNull();
        assertThat(producer.name()).isEqualTo("rl.vllm.generate");
        // a producer links with at most what it generated
        assertThat((Long) l.attributes().get("rl.link.trajectories"))
            .isPositive().isLessThanOrEqualTo((Long) producer.attributes().get("rl.num_requests"));
      });
      // the links' counts add up to the step's batch: no trajectory without its producer
      assertThat(step.links().stream().mapToLong(l -> (Long) l.attributes().get("rl.link.trajectories")).sum())
          .isEqualTo(trajectories);
      assertThat(step.links().stream().map(SpanRecord.Link::spanId).distinct().count())
          .isEqualTo(step.links().size());
      step.links().forEach(l -> linked.add(l.spanId()));
    }
    assertThat(run.steps()).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(trajectories));
    // batched calls: a handful of producers per step, not one per rollout
    assertThat(linked.size()).isLessThanOrEqualTo(STEPS * 2 * 4);
  }
}
