package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.ASYNC_0;
import static dev.ravel.telemetry.view.TestSpans.ASYNC_1;
import static dev.ravel.telemetry.view.TestSpans.LOOSE_TRACE;
import static dev.ravel.telemetry.view.TestSpans.SYNC_TRACE;
import static dev.ravel.telemetry.view.TestSpans.T0;
import static dev.ravel.telemetry.view.TestSpans.span;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.traces.SpanRecord;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

final class RunViewTest {
  private final RunView run = RunView.of(TestSpans.shuffled(TestSpans.all(), 7));

  @Test
  void steps_areTheStepRootedTracesOrderedByStepNumber() {
    assertThat(run.steps()).extracting(StepView::step).containsExactly(0L, 1L, 5L);
    assertThat(run.steps()).extracting(StepView::traceId).containsExactly(ASYNC_0, ASYNC_1, SYNC_TRACE);
    assertThat(run.steps()).extracting(StepView::mode).containsExactly("async", "async", "sync");
  }

  @Test
  void step_findsByNumberAndIsEmptyForAnUnknownOne() {
    assertThat(run.step(5)).get().extracting(StepView::traceId).isEqualTo(SYNC_TRACE);
    assertThat(run.step(7)).isEmpty();
  }

  @Test
  void unconnected_listsOrphansWithMissingParentsAndSpansOutsideStepTraces() {
    assertThat(run.unconnected()).extracting(SpanRecord::name)
        .containsExactly("rl.demo.run", "rl.worker.generate", "rl.worker.generate_async");
    SpanRecord orphan = run.unconnected().get(2);
    assertThat(orphan.traceId()).isEqualTo(ASYNC_1);
    assertThat(run.unconnectedReason(orphan)).isEqualTo("missing parent " + TestSpans.sid(0xdead));
    SpanRecord demo = run.unconnected().get(0);
    assertThat(demo.traceId()).isEqualTo(LOOSE_TRACE);
    assertThat(run.unconnectedReason(demo)).isEqualTo("trace has no rl.grpo.step root");
    // the orphan is in a step's trace, but not in its tree
    assertThat(run.step(1).orElseThrow().nodes()).extracting(n -> n.span().spanId())
        .doesNotContain(orphan.spanId());
  }

  @Test
  void unconnected_everySpanIsInExactlyOneStepTreeOrUnconnected() {
    int inTrees = run.steps().stream().mapToInt(StepView::spanCount).sum();
    assertThat(inTrees + run.unconnected().size()).isEqualTo(TestSpans.all().size());
  }

  @Test
  void unconnected_repeatedSpanIdIsKeptOnceInTheTreeAndListedApart() {
    List<SpanRecord> spans = new ArrayList<>(TestSpans.syncStep());
    spans.add(span(SYNC_TRACE, 2, 1, "rl.grpo.data_processing_again", 1, 2).build());
    RunView v = RunView.of(spans);
    assertThat(v.step(5).orElseThrow().spanCount()).isEqualTo(TestSpans.syncStep().size());
    assertThat(v.unconnected()).singleElement().satisfies(s -> {
      assertThat(s.name()).isEqualTo("rl.grpo.data_processing_again");
      assertThat(v.unconnectedReason(s)).startsWith("duplicate span id");
    });
  }

  @Test
  void of_runIdStartProcessesAndErrorsCoverAllSpans() {
    assertThat(run.runId()).isEqualTo(TestSpans.RUN);
    assertThat(run.startNanos()).isEqualTo(T0);
    assertThat(run.start()).isEqualTo(Instant.parse("2026-01-01T00:00:00Z"));
    assertThat(run.processes()).containsExactly("driver/100", "generation_worker/201", "generation_worker/202",
        "trainer/300", "trajectory_collector/400");
    assertThat(run.errorCount()).isEqualTo(2); // one in the sync step, one unconnected
    assertThat(run.spans()).hasSize(TestSpans.all().size());
  }

  @Test
  void of_stepOfTraceAndSpanLookUpAcrossTheRun() {
    assertThat(run.stepOfTrace(ASYNC_0)).hasValue(0);
    assertThat(run.stepOfTrace(LOOSE_TRACE)).isEmpty();
    assertThat(run.span(ASYNC_0, TestSpans.sid(0x30))).get().extracting(SpanRecord::name)
        .isEqualTo("rl.vllm.generate");
    assertThat(run.span(TestSpans.MISSING_TRACE, TestSpans.sid(0xff))).isEmpty();
  }

  @Test
  void of_emptyRunHasNoStepsAndNoRunId() {
    RunView v = RunView.of(List.of());
    assertThat(v.steps()).isEmpty();
    assertThat(v.unconnected()).isEmpty();
    assertThat(v.runId()).isEmpty();
    assertThat(v.startNanos()).isZero();
    assertThat(v.errorCount()).isZero();
  }

  @Test
  void of_stepRootWithoutStepNumberIsStepMinusOne() {
    RunView v = RunView.of(List.of(span(TestSpans.tid(3), 1, 0, "rl.grpo.step", 0, 1).build()));
    assertThat(v.steps()).singleElement().extracting(StepView::step).isEqualTo(-1L);
  }

  @Test
  void of_stepNumberGivenAsStringIsRead() {
    RunView v = RunView.of(List.of(span(TestSpans.tid(3), 1, 0, "rl.grpo.step", 0, 1).attr("rl.step", "12")
        .build()));
    assertThat(v.step(12)).isPresent();
  }

  @Test
  void of_inputOrderDoesNotMatter() {
    RunView other = RunView.of(TestSpans.shuffled(TestSpans.all(), 99));
    assertThat(other.spans()).isEqualTo(run.spans());
    assertThat(other.unconnected()).isEqualTo(run.unconnected());
    for (int i = 0; i < run.steps().size(); i++) {
      assertThat(other.steps().get(i).root()).isEqualTo(run.steps().get(i).root());
    }
  }
}
