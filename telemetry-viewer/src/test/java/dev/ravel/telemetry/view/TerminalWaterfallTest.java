package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.span;
import static dev.ravel.telemetry.view.TestSpans.tid;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

final class TerminalWaterfallTest {
  private static final char ESC = 0x1b;

  private final RunView run = RunView.of(TestSpans.all());
  private final StepView sync = run.step(5).orElseThrow();
  private final StepView async1 = run.step(1).orElseThrow();
  private final TerminalWaterfall term = new TerminalWaterfall();

  private static List<String> lines(String text) {
    return List.of(text.split("\n", -1)).subList(0, text.split("\n", -1).length - 1);
  }

  /** The row of the span with this name (the n-th such row, from 0). */
  private static String row(String text, String name, int n) {
    return lines(text).stream().filter(l -> l.matches("^[|`\\- ]*" + java.util.regex.Pattern.quote(name) + " .*"))
        .skip(n).findFirst().orElseThrow(() -> new AssertionError("no row for " + name + " in\n" + text));
  }

  @Test
  void render_everyLineFitsTheWidthFrom60To200() {
    for (int width = 60; width <= 200; width += 7) {
      for (boolean ansi : new boolean[] {false, true}) {
        for (StepView s : run.steps()) {
          for (String line : lines(term.render(s, width, ansi))) {
            assertThat(TerminalWaterfall.visible(line)).as("width %d ansi %s: %s", width, ansi, line)
                .isLessThanOrEqualTo(width);
          }
        }
        for (String line : lines(term.renderRun(run, width, ansi))) {
          assertThat(TerminalWaterfall.visible(line)).as("width %d ansi %s: %s", width, ansi, line)
              .isLessThanOrEqualTo(width);
        }
      }
    }
  }

  @Test
  void render_plainHasNoAnsiEscapesAndIsAscii() {
    for (StepView s : run.steps()) {
      String text = term.render(s, 120, false);
      assertThat(text).doesNotContain(String.valueOf(ESC));
      assertThat(text.chars()).allMatch(c -> c == '\n' || (c >= 0x20 && c < 0x7f));
    }
    assertThat(term.renderRun(run, 120, false)).doesNotContain(String.valueOf(ESC));
  }

  @Test
  void render_ansiColoursProcessesInFirstSeenOrderAndErrorsRed() {
    String text = term.render(sync, 120, true);
    assertThat(text).contains(ESC + "[36mp1" + ESC + "[0m driver/100")
        .contains(ESC + "[33mp2" + ESC + "[0m generation_worker/201");
    assertThat(text).contains(ESC + "[1;31mllm_request" + ESC + "[0m"); // the failed request's name
  }

  @Test
  void render_headerHasServiceOperationTraceAndCounts() {
    String text = term.render(sync, 200, false);
    List<String> l = lines(text);
    assertThat(l.get(0)).isEqualTo("ravel-driver: rl.grpo.step  step 5 (sync)");
    assertThat(text).contains("trace " + TestSpans.SYNC_TRACE).contains("start 2026-01-01 00:00:00.000 UTC")
        .contains("duration 100ms").contains("services 3").contains("processes 4").contains("depth 5")
        .contains("spans 18").contains("errors 1")
        .contains("phases: data 5%  refit 10%  gen 50%  reward 5%  logprobs 5%  adv 1%  train 19%  ckpt 3%")
        .contains("goodput: productive 80%  overhead 20%  idle 0%  wasted 0%");
  }

  @Test
  void render_rulerHasFiveTicksAndLabels() {
    String text = term.render(sync, 120, false);
    String ruler = lines(text).stream().filter(l -> l.startsWith("span ")).findFirst().orElseThrow();
    assertThat(ruler.chars().filter(c -> c == '+').count()).isEqualTo(5);
    String labels = lines(text).get(lines(text).indexOf(ruler) - 1);
    assertThat(labels.trim().split(" +")).containsExactly("0", "25.0ms", "50.0ms", "75.0ms", "100ms");
  }

  @Test
  void render_oneRowPerSpanInTreeOrder() {
    String text = term.render(sync, 160, false);
    List<String> rows = lines(text).stream()
        .filter(l -> l.matches("^[|`\\- ]*(rl\\.|llm_request).*") && !l.startsWith("phases")).toList();
    assertThat(rows).hasSize(sync.spanCount());
    for (int i = 0; i < rows.size(); i++) {
      assertThat(rows.get(i)).contains(sync.nodes().get(i).name());
    }
    assertThat(rows.get(0)).startsWith("rl.grpo.step");
    assertThat(rows.get(1)).startsWith("|-rl.grpo.data_processing");
    assertThat(rows.get(7)).startsWith("|   | |-llm_request");
  }

  @Test
  void render_marksErrorsWithBangAndTheCriticalPathWithStarAndHashes() {
    String text = term.render(sync, 160, false);
    String failed = row(text, "llm_request", 1);
    assertThat(failed).contains(" ! ").contains("=").doesNotContain("#");
    String offPath = row(text, "rl.worker.generate", 0);
    assertThat(offPath).doesNotContain("*").contains("=").contains("43.0ms p2");
    String onPath = row(text, "rl.worker.generate", 1);
    assertThat(onPath).contains(" * ").contains("#").contains("46.0ms p3");
  }

  @Test
  void render_barsArePlacedByStartOffsetAndScaledToTheStep() {
    String text = term.render(sync, 160, false);
    String ruler = lines(text).stream().filter(l -> l.startsWith("span ")).findFirst().orElseThrow();
    int first = ruler.indexOf('+');
    int last = ruler.lastIndexOf('+');
    assertThat(row(text, "rl.grpo.step", 0).indexOf('#')).isEqualTo(first);
    String checkpoint = row(text, "rl.grpo.checkpointing", 0);
    // checkpointing runs 95-98 ms of 100: its bar starts 95% of the way along the timeline
    double at = (double) (checkpoint.indexOf('#') - first) / (last - first + 1);
    assertThat(at).isBetween(0.94, 0.96);
    assertThat(checkpoint.length() - checkpoint.replace("#", "").length()).isBetween(3, 5);
  }

  @Test
  void render_listsConsumedRolloutsWithTheirStepsAndMissingOnes() {
    String text = term.render(async1, 120, false);
    assertThat(text).contains("consumed rollouts: 3  from steps 0  in 2 traces  1 missing");
    assertThat(text).contains("  - rl.vllm.generate  step 0  trace 00000000  span 00000000  37.0ms");
    assertThat(text).contains("  ! (missing span)  trace " + TestSpans.MISSING_TRACE);
    assertThat(term.render(sync, 120, false)).contains("consumed rollouts: none");
  }

  @Test
  void render_manyConsumedRolloutsAreCutWithACount() {
    String t = tid(30);
    TestSpans.B root = span(t, 1, 0, "rl.grpo.step", 0, 10).attr("rl.step", 1L);
    for (int i = 0; i < 25; i++) {
      root.link(tid(31), 100 + i);
    }
    String text = term.render(RunView.of(List.of(root.build())).step(1).orElseThrow(), 100, false);
    assertThat(text).contains("consumed rollouts: 25  from no step  in 1 trace  25 missing");
    assertThat(lines(text).stream().filter(l -> l.startsWith("  ! (missing span)"))).hasSize(
        TerminalWaterfall.MAX_ROLLOUT_LINES);
    assertThat(text).contains("  ... and 15 more");
  }

  @Test
  void render_controlCharactersInNamesCannotInjectEscapesOrLines() {
    String t = tid(40);
    RunView v = RunView.of(List.of(span(t, 1, 0, "rl.grpo.step", 0, 10).attr("rl.step", 1L).build(),
        span(t, 2, 1, "evil" + ESC + "[31m\nname", 1, 2).build()));
    String text = term.render(v.step(1).orElseThrow(), 80, false);
    assertThat(text).doesNotContain(String.valueOf(ESC)).contains("evil?[31m?name");
    assertThat(lines(text)).anySatisfy(l -> assertThat(l).startsWith("`-evil?[31m?name"))
        .noneSatisfy(l -> assertThat(l).startsWith("name"));
  }

  @Test
  void render_longNamesAreCutInTheNameColumn() {
    String t = tid(41);
    String name = "rl.a.very.long.span.name.that.does.not.fit.in.the.name.column.at.all";
    RunView v = RunView.of(List.of(span(t, 1, 0, "rl.grpo.step", 0, 10).attr("rl.step", 1L).build(),
        span(t, 2, 1, name, 1, 2).build()));
    String text = term.render(v.step(1).orElseThrow(), 60, false);
    assertThat(text).contains("`-rl.a.very.long.~  ").doesNotContain(name);
  }

  @Test
  void render_rejectsWidthsBelowTheMinimum() {
    assertThat(catchThrowable(() -> term.render(sync, 39, false))).isInstanceOf(IllegalArgumentException.class);
    assertThat(term.render(sync, TerminalWaterfall.MIN_WIDTH, false)).isNotEmpty();
  }

  @Test
  void renderRun_oneLinePerStepWithDurationGoodputAndPhaseSplit() {
    String text = term.renderRun(run, 200, false);
    List<String> l = lines(text);
    assertThat(l.get(0)).isEqualTo("run " + TestSpans.RUN);
    assertThat(text).contains("steps 3").contains("spans 50").contains("errors 2").contains("unconnected 3");
    assertThat(l).contains(
        "     0  50.0ms    err 0   good 6/13/81/0%  data 2%  refit 12%  logprobs 2%  adv 1%  train 3%  starved 80%"
            + "  hop 1.05x  engine 0.95  (async)",
        "     1  50.0ms    err 0   good 68/12/20/0%  data 2%  refit 20%  logprobs 8%  adv 2%  train 58%  starved 10%"
            + "  (async)",
        "!    5  100ms     err 1   good 80/20/0/0%  data 5%  refit 10%  gen 50%  reward 5%  logprobs 5%  adv 1%"
            + "  train 19%  ckpt 3%  hop 1.04x  engine 0.96  (sync)");
  }

  @Test
  void hopRatioAndEngineShare_theGenerationHopOfTheSyncStep() {
    StepView step5 = run.step(5).orElseThrow();
    // rl.vllm.generate 48 ms over its slowest worker call, 46 ms
    assertThat(step5.hopRatio()).isCloseTo(48.0 / 46, org.assertj.core.data.Offset.offset(1e-9));
    // the engine spans' extent over each worker call: 41 of 43 ms and 44 of 46 ms, the median of the two
    assertThat(step5.engineShare()).isCloseTo((41.0 / 43 + 44.0 / 46) / 2, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(term.render(step5, 200, false)).contains("generation: hop 1.04x  engine 0.96");
    // step 1 of this run trains on what step 0's calls generated: no generation under it, no ratios
    assertThat(run.step(1).orElseThrow().hopRatio()).isNaN();
    assertThat(run.step(1).orElseThrow().engineShare()).isNaN();
  }

  @Test
  void renderRun_wrapsStepLinesWhenNarrow() {
    String text = term.renderRun(run, 60, false);
    int i = lines(text).indexOf(lines(text).stream().filter(l -> l.startsWith("!    5")).findFirst().orElseThrow());
    assertThat(lines(text).get(i + 1)).startsWith("        ");
  }

  @Test
  void renderRun_listsUnconnectedSpansWithProcessAndReason() {
    String text = term.renderRun(run, 200, false);
    assertThat(text).contains("unconnected spans: 3 (in no step's tree)")
        .contains("  - rl.demo.run  driver/100  trace 00000000  trace has no rl.grpo.step root")
        .contains("  ! rl.worker.generate  generation_worker/201  trace 00000000  trace has no rl.grpo.step root")
        .contains("  - rl.worker.generate_async  generation_worker/202  trace 00000000  missing parent "
            + TestSpans.sid(0xdead));
  }

  @Test
  void renderRun_listsAtMostTwentyUnconnectedSpansThenTheRest() {
    List<SpanRecord> spans = new ArrayList<>(TestSpans.syncStep());
    for (int i = 0; i < 27; i++) {
      spans.add(span(tid(50 + i), 1, 0, "rl.orphan." + i, i, i + 1).build());
    }
    String text = term.renderRun(RunView.of(spans), 100, false);
    assertThat(text).contains("unconnected spans: 27");
    assertThat(lines(text).stream().filter(l -> l.startsWith("  - rl.orphan."))).hasSize(20);
    assertThat(text).contains("  ... and 7 more");
  }

  @Test
  void renderRun_runWithoutStepsSaysSo() {
    String text = term.renderRun(RunView.of(TestSpans.looseSpans().subList(1, 3)), 80, false);
    assertThat(text).contains("(no rl.grpo.step traces)").contains("unconnected spans: 2");
  }

  @Test
  void render_isDeterministicWhateverTheInputOrder() {
    RunView other = RunView.of(TestSpans.shuffled(TestSpans.all(), 11));
    for (boolean ansi : new boolean[] {false, true}) {
      for (StepView s : run.steps()) {
        assertThat(term.render(other.step(s.step()).orElseThrow(), 130, ansi)).isEqualTo(term.render(s, 130, ansi));
      }
      assertThat(term.renderRun(other, 130, ansi)).isEqualTo(term.renderRun(run, 130, ansi));
    }
  }
}
