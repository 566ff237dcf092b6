package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.ASYNC_0;
import static dev.ravel.telemetry.view.TestSpans.MISSING_TRACE;
import static dev.ravel.telemetry.view.TestSpans.MS;
import static dev.ravel.telemetry.view.TestSpans.sid;
import static dev.ravel.telemetry.view.TestSpans.span;
import static dev.ravel.telemetry.view.TestSpans.tid;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class StepViewTest {
  private static final double EPS = 1e-9;

  private final RunView run = RunView.of(TestSpans.shuffled(TestSpans.all(), 3));
  private final StepView sync = run.step(5).orElseThrow();
  private final StepView async0 = run.step(0).orElseThrow();
  private final StepView async1 = run.step(1).orElseThrow();

  private static List<String> names(List<SpanNode> nodes) {
    return nodes.stream().map(SpanNode::name).toList();
  }

  private static List<String> ids(List<SpanNode> nodes) {
    return nodes.stream().map(n -> n.span().spanId()).toList();
  }

  // ---------------------------------------------------------------- tree

  @Test
  void root_isTheStepSpanWithChildrenOrderedByStartTime() {
    SpanNode root = sync.root();
    assertThat(root.name()).isEqualTo("rl.grpo.step");
    assertThat(root.depth()).isZero();
    assertThat(names(root.children())).containsExactly("rl.grpo.data_processing", "rl.grpo.refit",
        "rl.grpo.generation", "rl.grpo.reward_calculation", "rl.grpo.policy_and_reference_logprobs",
        "rl.grpo.advantage_calculation", "rl.grpo.policy_training", "rl.grpo.checkpointing");
    SpanNode generate = root.children().get(2).children().get(0);
    assertThat(generate.name()).isEqualTo("rl.vllm.generate");
    assertThat(generate.depth()).isEqualTo(2);
    // both workers start at 17 ms: the one that ends first comes first
    assertThat(ids(generate.children())).containsExactly(sid(7), sid(10));
    assertThat(generate.children().get(0).children()).extracting(n -> n.depth()).containsOnly(4);
  }

  @Test
  void nodes_areInDepthFirstDisplayOrder() {
    assertThat(ids(sync.nodes())).containsExactly(sid(1), sid(2), sid(3), sid(4), sid(5), sid(6), sid(7), sid(8),
        sid(9), sid(10), sid(11), sid(12), sid(13), sid(14), sid(15), sid(16), sid(17), sid(18));
  }

  @Test
  void counts_depthSpansErrorsProcessesAndServices() {
    assertThat(sync.depth()).isEqualTo(5); // step > generation > vllm.generate > worker > llm_request
    assertThat(sync.spanCount()).isEqualTo(18);
    assertThat(sync.errorCount()).isEqualTo(1);
    assertThat(sync.processes()).containsExactly("driver/100", "generation_worker/201", "generation_worker/202",
        "trainer/300");
    assertThat(sync.services()).containsExactly("ravel-driver", "ravel-generation_worker", "ravel-trainer");
    assertThat(sync.durationNanos()).isEqualTo(100 * MS);
    assertThat(sync.traceDurationNanos()).isEqualTo(100 * MS);
  }

  @Test
  void traceExtent_coversSpansThatOutliveTheRoot() {
    assertThat(async0.durationNanos()).isEqualTo(50 * MS);
    assertThat(async0.traceStartNanos()).isEqualTo(async0.startNanos());
    assertThat(async0.traceDurationNanos()).isEqualTo(80 * MS); // the collector's generation runs to 80 ms
  }

  // ---------------------------------------------------------------- phases

  @Test
  void phaseNanos_syncStepSplitsByDirectChildInPipelineOrder() {
    assertThat(sync.phaseNanos()).containsExactly(Map.entry("data_processing", 5 * MS), Map.entry("refit", 10 * MS),
        Map.entry("generation", 50 * MS), Map.entry("reward_calculation", 5 * MS),
        Map.entry("policy_and_reference_logprobs", 5 * MS), Map.entry("advantage_calculation", MS),
        Map.entry("policy_training", 19 * MS), Map.entry("checkpointing", 3 * MS));
  }

  @Test
  void phaseNanos_asyncStepHasIdleAndNoGeneration() {
    assertThat(async1.phaseNanos()).containsExactly(Map.entry("data_processing", MS), Map.entry("refit", 10 * MS),
        Map.entry("policy_and_reference_logprobs", 4 * MS), Map.entry("advantage_calculation", MS),
        Map.entry("policy_training", 29 * MS), Map.entry("idle.buffer_starvation", 5 * MS));
  }

  @Test
  void phaseNanos_samePhaseTwiceAddsUpAndOverlapsCountOnce() {
    String t = tid(5);
    RunView v = RunView.of(List.of(
        span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build(),
        span(t, 2, 1, "rl.grpo.data_processing", 0, 10).build(),
        span(t, 3, 1, "rl.grpo.data_processing", 20, 30).build(),
        span(t, 4, 1, "rl.grpo.data_processing", 25, 35).build(),
        span(t, 5, 1, "custom.phase", 90, 120).build())); // clipped to the root's end
    assertThat(v.step(1).orElseThrow().phaseNanos())
        .containsExactly(Map.entry("data_processing", 25 * MS), Map.entry("custom.phase", 10 * MS));
  }

  @Test
  void nodes_vllmsLlmRequestWithoutChildren_isDrawnWithItsQueuePrefillAndDecodeFromItsAttributes() {
    String t = tid(6);
    RunView v = RunView.of(List.of(
        span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build(),
        span(t, 2, 1, "rl.worker.generate", 0, 90).in(TestSpans.WORKER_1).build(),
        span(t, 3, 2, "llm_request", 10, 60).in(TestSpans.WORKER_1).attr("gen_ai.latency.time_in_queue", 0.005)
            .attr("gen_ai.latency.time_in_model_prefill", 0.010).attr("gen_ai.latency.time_in_model_decode", 0.050)
            .build()));

    SpanNode request = v.step(1).orElseThrow().nodes().stream().filter(n -> n.span().name().equals("llm_request"))
        .findFirst().orElseThrow();
    assertThat(request.children()).extracting(n -> n.span().name())
        .containsExactly("llm_request.queued", "llm_request.prefill", "llm_request.decode");
    // consecutive from the request's start; the decode clipped to its end (10 + 5 + 10 + 50 > 60)
    assertThat(request.children()).extracting(n -> n.span().startNanos() - TestSpans.T0)
        .containsExactly(10 * MS, 15 * MS, 25 * MS);
    assertThat(request.children()).extracting(n -> n.span().endNanos() - TestSpans.T0)
        .containsExactly(15 * MS, 25 * MS, 60 * MS);
    assertThat(request.children()).allSatisfy(n -> assertThat(n.span().attributes()).containsKey(StepView.DRAWN_FROM));
  }

  @Test
  void nodes_anLlmRequestWithItsOwnLifecycle_keepsIt() {
    List<SpanRecord> spans = TestSpans.all();
    RunView v = RunView.of(spans);
    assertThat(v.steps()).allSatisfy(step -> assertThat(step.nodes())
        .noneMatch(n -> n.span().attributes().containsKey(StepView.DRAWN_FROM)));
  }

  // ---------------------------------------------------------------- goodput

  @Test
  void goodput_syncStepIsProductivePhasesOverOverheadAndRootSelfTime() {
    Goodput g = sync.goodput();
    assertThat(g.productive()).isCloseTo(0.80, within(EPS)); // gen 50 + reward 5 + logprobs 5 + adv 1 + train 19
    assertThat(g.overhead()).isCloseTo(0.20, within(EPS)); // data 5 + refit 10 + checkpoint 3 + root's own 2
    assertThat(g.idle()).isZero();
    assertThat(g.wasted()).isZero();
    assertThat(g.total()).isCloseTo(1.0, within(EPS));
  }

  @Test
  void goodput_droppedTrajectoriesMoveTheirShareOfGenerationToWasted() {
    List<SpanRecord> spans = new ArrayList<>(TestSpans.syncStep());
    spans.set(0, span(TestSpans.SYNC_TRACE, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 5L)
        .attr("rl.dropped_trajectories", 1L).attr("rl.num_trajectories", 3L).build());
    Goodput g = RunView.of(spans).step(5).orElseThrow().goodput();
    assertThat(g.wasted()).isCloseTo(0.125, within(EPS)); // generation 0.50 * 1 / (1 + 3)
    assertThat(g.productive()).isCloseTo(0.675, within(EPS));
    assertThat(g.overhead()).isCloseTo(0.20, within(EPS));
    assertThat(g.total()).isCloseTo(1.0, within(EPS));
  }

  @Test
  void goodput_droppedCountWithoutTrajectoryCountWastesNothing() {
    List<SpanRecord> spans = new ArrayList<>(TestSpans.syncStep());
    spans.set(0, span(TestSpans.SYNC_TRACE, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 5L)
        .attr("rl.dropped_trajectories", 4L).build());
    assertThat(RunView.of(spans).step(5).orElseThrow().goodput().wasted()).isZero();
  }

  @Test
  void goodput_asyncIdleCountsStarvationAndTheBubbleNestedInRefit() {
    Goodput g = async1.goodput();
    assertThat(g.idle()).isCloseTo(0.20, within(EPS)); // starvation 5 + bubble 5 of 50
    assertThat(g.productive()).isCloseTo(0.68, within(EPS)); // logprobs 4 + adv 1 + train 29
    assertThat(g.overhead()).isCloseTo(0.12, within(EPS)); // data 1 + refit 10 less bubble 5
    assertThat(g.wasted()).isZero();
  }

  @Test
  void goodput_idleInsideAProductivePhaseCountsAsIdle() {
    String t = tid(6);
    RunView v = RunView.of(List.of(
        span(t, 1, 0, "rl.grpo.step", 0, 10).attr("rl.step", 1L).build(),
        span(t, 2, 1, "rl.grpo.generation", 0, 8).build(),
        span(t, 3, 2, "rl.idle.buffer_starvation", 2, 4).build()));
    Goodput g = v.step(1).orElseThrow().goodput();
    assertThat(g.idle()).isCloseTo(0.2, within(EPS));
    assertThat(g.productive()).isCloseTo(0.6, within(EPS));
    assertThat(g.overhead()).isCloseTo(0.2, within(EPS));
  }

  @Test
  void goodput_zeroDurationStepIsAllZero() {
    RunView v = RunView.of(List.of(span(tid(7), 1, 0, "rl.grpo.step", 5, 5).attr("rl.step", 1L).build()));
    assertThat(v.step(1).orElseThrow().goodput()).isEqualTo(Goodput.NONE);
  }

  @Test
  void goodput_rejectsSharesOutOfRange() {
    assertThat(catchThrowable(() -> new Goodput(-0.1, 0, 0, 0))).isInstanceOf(IllegalArgumentException.class);
    assertThat(catchThrowable(() -> new Goodput(0.6, 0.6, 0, 0))).isInstanceOf(IllegalArgumentException.class);
    assertThat(catchThrowable(() -> new Goodput(Double.NaN, 0, 0, 0))).isInstanceOf(IllegalArgumentException.class);
  }

  // ---------------------------------------------------------------- critical path

  @Test
  void criticalPath_takesTheLastFinishingChildNotTheLongest() {
    String t = tid(8);
    RunView v = RunView.of(List.of(
        span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build(),
        span(t, 2, 1, "long", 0, 90).build(), // the longest child, but it ends after 'last' started
        span(t, 3, 1, "last", 50, 100).build(), // finishes last: on the path; the point moves to 50
        span(t, 4, 3, "inner", 60, 70).build(),
        span(t, 5, 1, "early", 10, 40).build())); // ends before 50: on the path next
    StepView s = v.step(1).orElseThrow();
    assertThat(names(s.criticalPath())).containsExactly("rl.grpo.step", "early", "last", "inner");
    SpanNode longest = s.root().children().stream().filter(n -> n.name().equals("long")).findFirst().orElseThrow();
    assertThat(longest.onCriticalPath()).isFalse();
  }

  @Test
  void criticalPath_syncStepFollowsTheWorkerThatFinishedLast() {
    assertThat(ids(sync.criticalPath())).containsExactly(sid(1), sid(2), sid(3), sid(4), sid(5), sid(6), sid(10),
        sid(11), sid(12), sid(13), sid(14), sid(15), sid(16), sid(17), sid(18));
    assertThat(sync.nodes()).filteredOn(n -> !n.onCriticalPath()).extracting(n -> n.span().spanId())
        .containsExactly(sid(7), sid(8), sid(9)); // worker 1 finished at 60, worker 2 at 63
  }

  @Test
  void criticalPath_childOutlivingItsParentIsClippedToTheParentsEnd() {
    String t = tid(9);
    RunView v = RunView.of(List.of(
        span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build(),
        span(t, 2, 1, "a", 0, 60).build(),
        span(t, 3, 1, "b", 40, 99).build(),
        span(t, 4, 1, "outlives", 95, 150).build(), // clipped to 95-100: last to finish
        span(t, 5, 1, "after", 120, 130).build())); // starts after the root's end: never on the path
    // from 95 (where 'outlives' starts), 'b' (ends 99) does not fit, 'a' (ends 60) does
    assertThat(names(v.step(1).orElseThrow().criticalPath())).containsExactly("rl.grpo.step", "a", "outlives");
  }

  @Test
  void criticalPath_gapsAreTheParentsOwnTime() {
    String t = tid(12);
    RunView v = RunView.of(List.of(
        span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build(),
        span(t, 2, 1, "first", 0, 20).build(),
        span(t, 3, 1, "second", 40, 60).build(),
        span(t, 4, 1, "overlapping", 30, 50).build())); // ends after 'second' starts: skipped
    assertThat(names(v.step(1).orElseThrow().criticalPath())).containsExactly("rl.grpo.step", "first", "second");
  }

  // ---------------------------------------------------------------- consumed rollouts

  @Test
  void consumedRollouts_resolveLinksAcrossTracesAndMarkMissingTargets() {
    List<SpanRecord> consumed = async1.consumedRollouts();
    assertThat(consumed).hasSize(3);
    assertThat(consumed.get(0).spanId()).isEqualTo(sid(0x30));
    assertThat(consumed.get(0).traceId()).isEqualTo(ASYNC_0);
    assertThat(consumed.get(0).name()).isEqualTo("rl.vllm.generate");
    assertThat(consumed.get(1).spanId()).isEqualTo(sid(0x31));
    assertThat(consumed.subList(0, 2)).noneMatch(StepView::isMissing);
    SpanRecord missing = consumed.get(2);
    assertThat(StepView.isMissing(missing)).isTrue();
    assertThat(missing.name()).isEqualTo(StepView.MISSING_SPAN_NAME);
    assertThat(missing.traceId()).isEqualTo(MISSING_TRACE);
    assertThat(missing.spanId()).isEqualTo(sid(0xff));
    assertThat(missing.attributes()).containsEntry("rl.link.kind", "rollout");
    assertThat(async1.consumedFromSteps()).containsExactly(0L);
    assertThat(async1.consumedStep(consumed.get(0))).hasValue(0);
    assertThat(async1.consumedStep(missing)).isEmpty();
  }

  @Test
  void consumedRollouts_stepWithoutLinksHasNone() {
    assertThat(sync.consumedRollouts()).isEmpty();
    assertThat(sync.consumedFromSteps()).isEmpty();
  }

  @Test
  void spanNode_isAnImmutableValue() {
    SpanNode n = sync.root();
    assertThat(catchThrowable(() -> n.children().clear())).isInstanceOf(UnsupportedOperationException.class);
    assertThat(catchThrowable(() -> sync.nodes().clear())).isInstanceOf(UnsupportedOperationException.class);
    assertThat(catchThrowable(() -> sync.phaseNanos().clear())).isInstanceOf(UnsupportedOperationException.class);
  }
}
