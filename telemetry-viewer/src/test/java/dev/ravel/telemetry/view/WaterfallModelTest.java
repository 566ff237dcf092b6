package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.MS;
import static dev.ravel.telemetry.view.TestSpans.sid;
import static dev.ravel.telemetry.view.TestSpans.span;
import static dev.ravel.telemetry.view.TestSpans.tid;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import org.junit.jupiter.api.Test;

final class WaterfallModelTest {
  private static final double EPS = 1e-9;

  private final RunView run = RunView.of(TestSpans.all());
  private final StepView sync = run.step(5).orElseThrow();
  private final StepView async0 = run.step(0).orElseThrow();
  private final WaterfallModel model = WaterfallModel.of(sync);

  private static WaterfallModel.Row row(WaterfallModel m, int spanId) {
    return m.rows().stream().filter(r -> r.span().spanId().equals(sid(spanId))).findFirst().orElseThrow();
  }

  private static List<List<Object>> rowKeys(WaterfallModel m) {
    return m.rows().stream().map(r -> List.<Object>of(r.span().spanId(), r.processIndex(), r.lastChild(),
        r.startOffsetNanos(), r.endOffsetNanos(), r.extentNanos())).toList();
  }

  /** A step 0-10 ms with one child at {@code startMs..endMs}, and the model of it. */
  private static WaterfallModel withChild(double startMs, double endMs) {
    String t = tid(70);
    RunView v = RunView.of(List.of(span(t, 1, 0, "rl.grpo.step", 0, 10).attr("rl.step", 1L).build(),
        span(t, 2, 1, "rl.child", startMs, endMs).build()));
    return WaterfallModel.of(v.step(1).orElseThrow());
  }

  // ---------------------------------------------------------------- processes

  @Test
  void processes_areInFirstSeenOrderWithTheServiceOfTheirFirstSpan() {
    assertThat(model.processes()).containsExactly(
        new WaterfallModel.Process("driver/100", "ravel-driver", 0),
        new WaterfallModel.Process("generation_worker/201", "ravel-generation_worker", 1),
        new WaterfallModel.Process("generation_worker/202", "ravel-generation_worker", 2),
        new WaterfallModel.Process("trainer/300", "ravel-trainer", 3));
    assertThat(model.processes()).extracting(WaterfallModel.Process::name).isEqualTo(sync.processes());
  }

  @Test
  void processes_carryTheRayNodeTheyRanOn() {
    String t = tid(71);
    java.util.Map<String, Object> remote = new java.util.LinkedHashMap<>(TestSpans.WORKER_1);
    remote.put("ray.node.ip", "10.231.7.2");
    StepView step = RunView.of(List.of(span(t, 1, 0, "rl.grpo.step", 0, 10).attr("rl.step", 1L).build(),
        span(t, 2, 1, "rl.worker.generate", 1, 9).in(remote).build())).step(1).orElseThrow();
    WaterfallModel m = WaterfallModel.of(step);
    assertThat(m.processes()).containsExactly(new WaterfallModel.Process("driver/100", "ravel-driver", 0, ""),
        new WaterfallModel.Process("generation_worker/201", "ravel-generation_worker", 1, "10.231.7.2"));
    assertThat(new TerminalWaterfall().render(step, 120, false))
        .contains("generation_worker/201 (ravel-generation_worker) on 10.231.7.2");
  }

  @Test
  void processIndex_knownProcessIsItsPlaceAndAnUnknownOneIsZero() {
    assertThat(model.processIndex("trainer/300")).isEqualTo(3);
    assertThat(model.processIndex("generation_worker/201")).isEqualTo(1);
    assertThat(model.processIndex("nobody/1")).isZero();
  }

  // ---------------------------------------------------------------- rows

  @Test
  void rows_followTheStepsDisplayOrderWithTheProcessOfEachSpan() {
    assertThat(model.rows()).extracting(WaterfallModel.Row::node).containsExactlyElementsOf(sync.nodes());
    for (WaterfallModel.Row r : model.rows()) {
      assertThat(r.processIndex()).as(r.span().spanId()).isEqualTo(model.processIndex(r.span().process()));
    }
    assertThat(row(model, 14).processIndex()).isEqualTo(3);
    assertThat(row(model, 10).processIndex()).isEqualTo(2);
  }

  @Test
  void rows_lastChildMarksTheRootAndTheLastOfEachParentsChildren() {
    assertThat(row(model, 1).lastChild()).isTrue(); // the root
    assertThat(row(model, 18).lastChild()).isTrue(); // checkpointing, the root's last child
    assertThat(row(model, 2).lastChild()).isFalse();
    assertThat(row(model, 8).lastChild()).isFalse(); // first llm_request of worker 1
    assertThat(row(model, 9).lastChild()).isTrue(); // second llm_request of worker 1
    assertThat(row(model, 7).lastChild()).isFalse(); // worker 1, before worker 2
    assertThat(row(model, 11).lastChild()).isTrue(); // worker 2's only request
  }

  @Test
  void rows_offsetsAreFromTheTraceStartAndCarryTheExtent() {
    WaterfallModel.Row checkpoint = row(model, 18);
    assertThat(checkpoint.startOffsetNanos()).isEqualTo(95 * MS);
    assertThat(checkpoint.endOffsetNanos()).isEqualTo(98 * MS);
    assertThat(checkpoint.extentNanos()).isEqualTo(100 * MS);
    assertThat(model.rows()).allSatisfy(r -> assertThat(r.startOffsetNanos())
        .isEqualTo(r.span().startNanos() - sync.traceStartNanos()));
  }

  // ---------------------------------------------------------------- scale

  @Test
  void extentNanos_isTheTraceDurationWhenSpansOutliveTheRoot() {
    WaterfallModel m = WaterfallModel.of(async0);
    assertThat(async0.durationNanos()).isEqualTo(50 * MS);
    assertThat(m.traceStartNanos()).isEqualTo(async0.traceStartNanos());
    assertThat(m.extentNanos()).isEqualTo(80 * MS);
    assertThat(m.tickLabels()).containsExactly("0", "20.0ms", "40.0ms", "60.0ms", "80.0ms");
  }

  @Test
  void tickLabels_areZeroThenEachQuarterOfTheExtent() {
    assertThat(model.tickLabels()).hasSize(WaterfallModel.TICKS)
        .containsExactly("0", "25.0ms", "50.0ms", "75.0ms", "100ms");
  }

  @Test
  void extentNanos_stepOfZeroDurationIsOneNanosecond() {
    String t = tid(71);
    RunView v = RunView.of(List.of(span(t, 1, 0, "rl.grpo.step", 0, 0).attr("rl.step", 1L).build(),
        span(t, 2, 1, "rl.grpo.generation", 0, 0).build()));
    WaterfallModel m = WaterfallModel.of(v.step(1).orElseThrow());
    assertThat(m.extentNanos()).isEqualTo(1);
    assertThat(m.phases()).singleElement().satisfies(p -> {
      assertThat(p.nanos()).isZero();
      assertThat(p.share()).isZero();
    });
    assertThat(m.rows()).allSatisfy(r -> {
      assertThat(r.leftPercent()).isZero();
      assertThat(r.widthPercent()).isZero();
      assertThat(r.firstCell(10)).isZero();
      assertThat(r.endCell(10)).isEqualTo(1);
    });
  }

  // ---------------------------------------------------------------- bars

  @Test
  void leftAndWidthPercent_placeTheBarOnTheExtent() {
    WaterfallModel.Row checkpoint = row(model, 18);
    assertThat(checkpoint.leftPercent()).isCloseTo(95, within(EPS));
    assertThat(checkpoint.widthPercent()).isCloseTo(3, within(EPS));
    assertThat(row(model, 1).leftPercent()).isZero();
    assertThat(row(model, 1).widthPercent()).isCloseTo(100, within(EPS));
  }

  @Test
  void widthPercent_barPastTheExtentIsCutAtItsEnd() {
    // the child runs 4-14 ms: the extent is 0-14 ms, so it is not cut; a row that claims more is
    WaterfallModel m = withChild(4, 14);
    WaterfallModel.Row child = m.rows().get(1);
    assertThat(child.leftPercent() + child.widthPercent()).isCloseTo(100, within(EPS));
    WaterfallModel.Row past = new WaterfallModel.Row(child.node(), 0, true, 7 * MS, 17 * MS, 14 * MS);
    assertThat(past.leftPercent()).isCloseTo(50, within(EPS));
    assertThat(past.widthPercent()).isCloseTo(50, within(EPS));
  }

  @Test
  void leftPercent_isClampedToTheTimeline() {
    WaterfallModel.Row root = model.rows().get(0);
    WaterfallModel.Row before = new WaterfallModel.Row(root.node(), 0, true, -5 * MS, 95 * MS, 100 * MS);
    WaterfallModel.Row after = new WaterfallModel.Row(root.node(), 0, true, 120 * MS, 220 * MS, 100 * MS);
    assertThat(before.leftPercent()).isZero();
    assertThat(before.widthPercent()).isCloseTo(100, within(EPS));
    assertThat(after.leftPercent()).isEqualTo(100);
    assertThat(after.widthPercent()).isZero();
  }

  @Test
  void firstAndEndCell_coverTheBarOnAGridOfCells() {
    WaterfallModel.Row checkpoint = row(model, 18);
    assertThat(checkpoint.firstCell(100)).isEqualTo(95);
    assertThat(checkpoint.endCell(100)).isEqualTo(98);
    assertThat(checkpoint.firstCell(10)).isEqualTo(9);
    assertThat(checkpoint.endCell(10)).isEqualTo(10);
    WaterfallModel.Row root = row(model, 1);
    assertThat(root.firstCell(37)).isZero();
    assertThat(root.endCell(37)).isEqualTo(37);
  }

  @Test
  void endCell_spanOfZeroLengthStillTakesOneCell() {
    WaterfallModel m = withChild(5, 5);
    WaterfallModel.Row child = m.rows().get(1);
    assertThat(child.firstCell(20)).isEqualTo(10);
    assertThat(child.endCell(20)).isEqualTo(11);
    WaterfallModel.Row atEnd = new WaterfallModel.Row(child.node(), 0, true, 10 * MS, 10 * MS, 10 * MS);
    assertThat(atEnd.firstCell(20)).isEqualTo(19);
    assertThat(atEnd.endCell(20)).isEqualTo(20);
  }

  // ---------------------------------------------------------------- phases and goodput

  @Test
  void phases_areInPipelineOrderWithShortLabelsAndSharesOfTheStep() {
    assertThat(model.phases()).extracting(WaterfallModel.Phase::key)
        .containsExactlyElementsOf(sync.phaseNanos().keySet());
    assertThat(model.phases()).extracting(WaterfallModel.Phase::label)
        .containsExactly("data", "refit", "gen", "reward", "logprobs", "adv", "train", "ckpt");
    WaterfallModel.Phase generation = model.phases().get(2);
    assertThat(generation.nanos()).isEqualTo(50 * MS);
    assertThat(generation.share()).isCloseTo(0.5, within(EPS));
    assertThat(WaterfallModel.phases(sync)).isEqualTo(model.phases());
  }

  @Test
  void goodput_isProductiveOverheadIdleWastedInThatOrder() {
    Goodput gp = sync.goodput();
    assertThat(model.goodput()).containsExactly(new WaterfallModel.Slice("productive", gp.productive()),
        new WaterfallModel.Slice("overhead", gp.overhead()), new WaterfallModel.Slice("idle", gp.idle()),
        new WaterfallModel.Slice("wasted", gp.wasted()));
  }

  @Test
  void of_sameStepFromSpansInAnyOrderGivesTheSameModel() {
    WaterfallModel other = WaterfallModel.of(RunView.of(TestSpans.shuffled(TestSpans.all(), 7)).step(5)
        .orElseThrow());
    assertThat(other.processes()).isEqualTo(model.processes());
    assertThat(other.tickLabels()).isEqualTo(model.tickLabels());
    assertThat(other.phases()).isEqualTo(model.phases());
    assertThat(rowKeys(other)).isEqualTo(rowKeys(model));
  }

  // ---------------------------------------------------------------- folds

  @Test
  void folds_aRunOfSameNamedSiblingLeavesIsOneFoldWithCountMedianMaxAndExtent() {
    WaterfallModel m = WaterfallModel.of(RunView.of(TestSpans.foldStep()).step(1).orElseThrow());

    assertThat(m.folds()).singleElement().satisfies(f -> {
      assertThat(f.count()).isEqualTo(29);
      assertThat(f.name()).isEqualTo("llm_request");
      assertThat(m.rows().subList(f.from(), f.to())).extracting(r -> r.span().spanId())
          .containsExactlyElementsOf(java.util.stream.IntStream.range(100, 129).mapToObj(TestSpans::sid).toList());
      assertThat(f.medianNanos()).isEqualTo(23 * MS);
      assertThat(f.maxNanos()).isEqualTo(37 * MS);
      assertThat(f.startOffsetNanos()).isEqualTo(1 * MS);
      assertThat(f.endOffsetNanos()).isEqualTo(66 * MS);
      assertThat(f.processIndex()).isEqualTo(row(m, 100).processIndex());
      assertThat(f.lastChild()).isFalse(); // the failed request follows
      assertThat(m.foldAt(f.from())).isSameAs(f);
      assertThat(m.foldAt(f.from() + 1)).isNull();
    });
    assertThat(TerminalWaterfall.FOLD_MIN).isEqualTo(WaterfallModel.FOLD_MIN);
  }

  @Test
  void folds_needFoldMinLeavesWithoutErrorsUnderOneParentInOneProcess() {
    String t = tid(78);
    List<dev.ravel.telemetry.traces.SpanRecord> s = new java.util.ArrayList<>();
    s.add(span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build());
    s.add(span(t, 2, 1, "rl.worker.generate", 0, 90).in(TestSpans.WORKER_1).build());
    s.add(span(t, 10, 2, "llm_request", 1, 2).in(TestSpans.WORKER_1).build());
    s.add(span(t, 11, 2, "llm_request", 2, 3).in(TestSpans.WORKER_1).build());
    s.add(span(t, 12, 2, "llm_request", 3, 4).in(TestSpans.WORKER_1).error("x").build()); // breaks the run
    s.add(span(t, 13, 2, "llm_request", 4, 5).in(TestSpans.WORKER_1).build());
    s.add(span(t, 14, 2, "llm_request", 5, 6).in(TestSpans.WORKER_1).build());
    s.add(span(t, 15, 2, "other", 6, 7).in(TestSpans.WORKER_1).build()); // another name
    s.add(span(t, 16, 2, "llm_request", 7, 8).in(TestSpans.WORKER_1).build());
    s.add(span(t, 17, 2, "llm_request", 8, 9).in(TestSpans.WORKER_1).build());
    s.add(span(t, 18, 2, "llm_request", 9, 10).in(TestSpans.WORKER_1).build());
    s.add(span(t, 3, 1, "rl.worker.generate", 0, 90).in(TestSpans.WORKER_2).build()); // one per parent
    s.add(span(t, 30, 3, "llm_request", 1, 2).in(TestSpans.WORKER_2).build());
    s.add(span(t, 4, 1, "rl.worker.generate", 0, 90).in(TestSpans.WORKER_2).build());
    s.add(span(t, 40, 4, "llm_request", 1, 2).in(TestSpans.WORKER_2).build());
    s.add(span(t, 5, 1, "rl.worker.generate", 0, 90).in(TestSpans.WORKER_2).build());
    s.add(span(t, 50, 5, "llm_request", 1, 2).in(TestSpans.WORKER_2).build());
    WaterfallModel m = WaterfallModel.of(RunView.of(s).step(1).orElseThrow());

    assertThat(m.folds()).singleElement().satisfies(f -> {
      assertThat(m.rows().subList(f.from(), f.to())).extracting(r -> r.span().spanId())
          .containsExactly(sid(16), sid(17), sid(18));
      assertThat(f.lastChild()).isTrue();
      assertThat(f.medianNanos()).isEqualTo(MS);
    });
  }

  @Test
  void folds_medianOfAnEvenCountIsTheLowerMiddle() {
    String t = tid(79);
    List<dev.ravel.telemetry.traces.SpanRecord> s = new java.util.ArrayList<>();
    s.add(span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build());
    double[][] times = {{0, 40}, {1, 11}, {2, 32}, {3, 23}};
    for (int i = 0; i < times.length; i++) {
      s.add(span(t, 10 + i, 1, "llm_request", times[i][0], times[i][1]).build());
    }
    WaterfallModel m = WaterfallModel.of(RunView.of(s).step(1).orElseThrow());

    assertThat(m.folds()).singleElement().satisfies(f -> {
      assertThat(f.count()).isEqualTo(4);
      assertThat(f.medianNanos()).isEqualTo(20 * MS); // of 10, 20, 30, 40
      assertThat(f.maxNanos()).isEqualTo(40 * MS);
      assertThat(f.onCriticalPath()).isTrue();
    });
  }
}
