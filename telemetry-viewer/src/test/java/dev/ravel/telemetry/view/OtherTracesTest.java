package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.span;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Traces that are not GRPO steps (a user's own actors): their trees, drawn like a step's without step parts. */
final class OtherTracesTest {
  static final String PIPELINE = TestSpans.tid(0x77);
  static final String SECOND = TestSpans.tid(0x78);

  static List<dev.ravel.telemetry.traces.SpanRecord> spans() {
    List<dev.ravel.telemetry.traces.SpanRecord> out = new ArrayList<>(TestSpans.syncStep());
    out.add(span(PIPELINE, 1, 0, "app.pipeline", 0, 100).build());
    out.add(span(PIPELINE, 2, 1, "rl.front.relay", 10, 90).in(TestSpans.WORKER_1).build());
    out.add(span(PIPELINE, 3, 2, "rl.echo.echo", 20, 30).in(TestSpans.TRAINER).error("refused").build());
    out.add(span(SECOND, 1, 0, "rl.shouter.environment", 200, 201).in(TestSpans.WORKER_2).build());
    return out;
  }

  @Test
  void otherTraces_oneTreePerRootOfATraceWithoutAStepByStartTime() {
    RunView run = RunView.of(TestSpans.shuffled(spans(), 3));
    assertThat(run.steps()).extracting(StepView::step).containsExactly(5L);
    assertThat(run.otherTraces()).extracting(StepView::traceId).containsExactly(PIPELINE, SECOND);
    StepView pipeline = run.otherTraces().get(0);
    assertThat(pipeline.step()).isEqualTo(-1);
    assertThat(pipeline.nodes()).extracting(n -> n.span().name())
        .containsExactly("app.pipeline", "rl.front.relay", "rl.echo.echo");
    assertThat(pipeline.processes()).hasSize(3);
    assertThat(pipeline.errorCount()).isEqualTo(1);
  }

  @Test
  void renderTraces_oneLinePerTraceWithCleanNames() {
    List<dev.ravel.telemetry.traces.SpanRecord> spans = new ArrayList<>(spans());
    spans.add(span(TestSpans.tid(0x79), 1, 0, "evil\u001b[2Jname", 300, 302).build());
    String text = TerminalWaterfall.renderTraces(RunView.of(spans));
    assertThat(text).contains("3 trace(s), no GRPO steps").contains(PIPELINE).contains(SECOND)
        .contains("evil?[2Jname").doesNotContain("\u001b");
    assertThat(text.lines().filter(l -> l.contains("app.pipeline"))).singleElement().asString()
        .containsPattern("app\\.pipeline\\s+\\S+\\s+100\\.0ms\\s+3\\s+3\\s+1\\s+" + PIPELINE);
  }

  @Test
  void render_traceThatIsNoStep_hasNoStepNumberPhasesOrRollouts() {
    StepView pipeline = RunView.of(spans()).otherTraces().get(0);
    String text = new TerminalWaterfall().render(pipeline, 120, false);
    assertThat(text).contains("app.pipeline").contains("rl.front.relay").contains("rl.echo.echo")
        .doesNotContain("step -1").doesNotContain("phases:").doesNotContain("goodput:")
        .doesNotContain("consumed rollouts");
    String html = new HtmlWaterfall().render(pipeline, RunView.of(spans()));
    assertThat(html).contains("data-span-name=\"app.pipeline\"").contains(": app.pipeline trace</title>")
        .doesNotContain("class=\"step-badge\"").doesNotContain("class=\"phase-seg\"")
        .doesNotContain("class=\"consumed-rollouts\"");
    // a GRPO step keeps its parts
    StepView step = RunView.of(spans()).steps().get(0);
    assertThat(step.isGrpoStep()).isTrue();
    assertThat(new HtmlWaterfall().render(step, RunView.of(spans()))).contains("class=\"step-badge\"")
        .contains("class=\"phase-seg\"").contains("class=\"consumed-rollouts\"");
  }
}
