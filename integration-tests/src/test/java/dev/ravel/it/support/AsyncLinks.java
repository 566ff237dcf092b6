package dev.ravel.it.support;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What an async run's step spans say about the calls that produced their trajectories, asserted the same way at
 * every batch size (GrpoScaleIT at 4,096 trajectories a step, GrpoPythonIT at 256).
 */
public final class AsyncLinks {
  private AsyncLinks() {}

  /**
   * Every step of {@code traces} links to each {@code rl.vllm.generate} call that produced one of its
   * {@code trajectories} trajectories, once, with how many it produced (at most what it generated), the counts
   * adding up to the batch; and the calls are batched: at most {@code maxCallsPerStep} producers per step over
   * the run.
   */
  public static void assertEveryStepLinksToEveryProducer(RunTraces traces, int steps, int trajectories,
      int maxCallsPerStep) {
    Map<String, SpanRecord> byId = traces.byId();
    List<SpanRecord> stepSpans = traces.named("rl.grpo.step");
    assertThat(stepSpans).hasSize(steps);
    Set<String> linked = new HashSet<>();
    for (SpanRecord step : stepSpans) {
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
          .as("trajectories linked by step %s", step.attributes().get("rl.step")).isEqualTo(trajectories);
      assertThat(step.links().stream().map(SpanRecord.Link::spanId).distinct().count())
          .isEqualTo(step.links().size());
      step.links().forEach(l -> linked.add(l.spanId()));
    }
    // batched calls: a handful of producers per step, not one per rollout
    assertThat(linked.size()).isLessThanOrEqualTo(steps * maxCallsPerStep);
  }
}
