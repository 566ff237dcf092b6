package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.span;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A run's start-up ({@code rl.run.startup}) as one waterfall: Ray, the actors per role, each worker's backend start
 * and the trainer's model load, and the inference servers' own start-up traces on the same time axis under the
 * worker that launched each (by the launching worker's pid, else by time).
 */
final class StartupViewTest {
  static final String STARTUP = TestSpans.tid(0x50);
  /** vLLM's loading of worker 1's server: a trace of its own, its resource naming worker 1 as its parent process. */
  static final String WORKER_1_SERVER = TestSpans.tid(0x54);
  /** The same for worker 2's server, with the same span ids below its root (vLLM seeds what they are drawn from). */
  static final String BY_PID = TestSpans.tid(0x51);
  /** A server's loading with no parent process named, begun inside worker 1's launch. */
  static final String BY_TIME = TestSpans.tid(0x52);
  /** A server started again mid-run (after the start-up): not start-up. */
  static final String LATER = TestSpans.tid(0x53);

  static Map<String, Object> server(Long parentPid) {
    Map<String, Object> r = new LinkedHashMap<>(TestSpans.process("inference_server", 0));
    r.remove("process.pid");
    if (parentPid != null) {
      r.put("process.parent_pid", String.valueOf(parentPid)); // as the run's receiver writes it: a string
    }
    return r;
  }

  static List<SpanRecord> spans() {
    String t = STARTUP;
    List<SpanRecord> s = new ArrayList<>(TestSpans.syncStep()); // step 5, at 0..100 ms: the start-up is before it
    s.add(span(t, 1, 0, "rl.run.startup", -1000, -10).build());
    s.add(span(t, 2, 1, "rl.run.ray", -1000, -900).attr("rl.ray.head_started", false).build());
    s.add(span(t, 3, 1, "rl.run.actors.generation_worker", -890, -20).attr("rl.actor.role", "generation_worker").build());
    s.add(span(t, 4, 1, "rl.run.actors.policy_trainer", -890, -700).attr("rl.actor.role", "policy_trainer").build());
    s.add(span(t, 10, 3, "rl.worker.start_backend", -850, -30).in(TestSpans.WORKER_1).build());
    s.add(span(t, 11, 10, "rl.worker.launch_server", -849, -60).in(TestSpans.WORKER_1).build());
    s.add(span(t, 14, 10, "rl.worker.init_weight_transfer", -60, -35).in(TestSpans.WORKER_1).build());
    s.add(span(t, 20, 3, "rl.worker.start_backend", -860, -25).in(TestSpans.WORKER_2).build());
    s.add(span(t, 21, 20, "rl.worker.launch_server", -859, -70).in(TestSpans.WORKER_2).build());
    s.add(span(t, 30, 4, "rl.trainer.load_model", -800, -710).in(TestSpans.TRAINER).build());
    // each server's loading, a trace of its own; below the roots (random ids) the same ids in both (seeded ones)
    s.add(span(WORKER_1_SERVER, 91, 0, "Overall Loading", -800, -100).in(server(201L)).build());
    s.add(span(WORKER_1_SERVER, 95, 91, "EngineCoreProc init", -750, -150).in(server(201L)).build());
    s.add(span(WORKER_1_SERVER, 96, 95, "Load weights", -700, -600).in(server(201L)).build());
    s.add(span(BY_PID, 97, 0, "Overall Loading", -790, -120).in(server(202L)).build());
    s.add(span(BY_PID, 95, 97, "EngineCoreProc init", -740, -160).in(server(202L)).build());
    s.add(span(BY_PID, 96, 95, "Load weights", -690, -610).in(server(202L)).build());
    s.add(span(BY_TIME, 93, 0, "Overall Loading", -780, -130).in(server(null)).build());
    s.add(span(LATER, 94, 0, "Overall Loading", 500, 900).in(server(202L)).build());
    return s;
  }

  @Test
  void startups_theStartupTraceWithTheServersLoadingUnderTheWorkerThatLaunchedIt() {
    RunView run = RunView.of(TestSpans.shuffled(spans(), 7));

    assertThat(run.startups()).singleElement().satisfies(up -> {
      assertThat(up.traceId()).isEqualTo(STARTUP);
      assertThat(up.isGrpoStep()).isFalse();
      assertThat(up.step()).isEqualTo(-1);
      assertThat(up.durationNanos()).isEqualTo(990 * TestSpans.MS);
      assertThat(up.nodes()).extracting(n -> n.depth() + " " + n.span().name() + " " + n.span().process())
          .containsExactly(
              "0 rl.run.startup driver/100",
              "1 rl.run.ray driver/100",
              "1 rl.run.actors.policy_trainer driver/100",
              "2 rl.trainer.load_model trainer/300",
              "1 rl.run.actors.generation_worker driver/100",
              "2 rl.worker.start_backend generation_worker/202",
              "3 rl.worker.launch_server generation_worker/202",
              "4 Overall Loading inference_server/?",
              "5 EngineCoreProc init inference_server/?",
              "6 Load weights inference_server/?",
              "2 rl.worker.start_backend generation_worker/201",
              "3 rl.worker.launch_server generation_worker/201",
              "4 Overall Loading inference_server/?",
              "5 EngineCoreProc init inference_server/?",
              "6 Load weights inference_server/?",
              "4 Overall Loading inference_server/?",
              "3 rl.worker.init_weight_transfer generation_worker/201");
    });
    StepView up = run.startups().get(0);
    // each server's spans under its own worker, though their ids below the roots are the same
    assertThat(up.nodes()).filteredOn(n -> n.span().name().equals("Load weights"))
        .extracting(n -> n.span().traceId()).containsExactly(BY_PID, WORKER_1_SERVER);
    // the placed roots say how: by the pid their resource names, the other by time within worker 1's launch
    assertThat(up.nodes()).filteredOn(n -> n.span().traceId().equals(BY_PID) && n.span().name().equals(
        "Overall Loading")).singleElement().satisfies(n -> {
          assertThat(n.span().attributes()).containsEntry(RunView.PLACED_BY, RunView.PLACED_BY_PID);
          assertThat(n.span().parentSpanId()).isEqualTo(TestSpans.sid(21));
        });
    assertThat(up.nodes()).filteredOn(n -> n.span().traceId().equals(BY_TIME)).singleElement().satisfies(n -> {
      assertThat(n.span().attributes()).containsEntry(RunView.PLACED_BY, RunView.PLACED_BY_TIME);
      assertThat(n.span().parentSpanId()).isEqualTo(TestSpans.sid(11));
    });
    // the exported records are left as they are: only the view places them
    assertThat(run.span(BY_PID, TestSpans.sid(97)).orElseThrow().isRoot()).isTrue();
  }

  @Test
  void startups_areNeitherOtherTracesNorUnconnected_aServerStartedAfterTheStartupStaysApart() {
    RunView run = RunView.of(spans());

    assertThat(run.steps()).extracting(StepView::step).containsExactly(5L);
    assertThat(run.otherTraces()).extracting(StepView::traceId).containsExactly(LATER);
    assertThat(run.unconnected()).extracting(SpanRecord::traceId).containsOnly(LATER);
  }

  @Test
  void render_theStartupWaterfallSaysWhatTheViewPlaced_theRunListSaysHowLongTheStartupTook() {
    RunView run = RunView.of(spans());

    String text = new TerminalWaterfall().render(run.startups().get(0), 160, false);
    assertThat(text).contains("rl.run.startup").contains("rl.run.ray").contains("rl.worker.launch_server")
        .contains("Overall Loading").contains("rl.trainer.load_model").contains("duration 990ms")
        .doesNotContain("phases:").doesNotContain("goodput:");
    assertThat(text).contains("placed (no parent in the trace)")
        .contains("2 by the launching worker's pid (process.parent_pid)")
        .contains("1 by time: within a worker's launch, no trace link");
    assertThat(new TerminalWaterfall().renderRun(run, 120, false)).contains("start-up 990ms")
        .contains("(its waterfall: --startup)").contains("unconnected 1");
  }

  @Test
  void startups_noStartupTrace_noneAndServerLoadingStaysAnOtherTrace() {
    List<SpanRecord> spans = new ArrayList<>(TestSpans.syncStep());
    spans.add(span(BY_PID, 97, 0, "Overall Loading", -790, -120).in(server(202L)).build());

    RunView run = RunView.of(spans);

    assertThat(run.startups()).isEmpty();
    assertThat(run.otherTraces()).extracting(StepView::traceId).containsExactly(BY_PID);
    assertThat(new TerminalWaterfall().renderRun(run, 120, false)).doesNotContain("start-up");
  }

  @Test
  void report_hasTheStartupRowAndItsWaterfall() {
    RunView run = RunView.of(spans());

    String page = RunReport.of("run-test", List.of(), run).render();

    assertThat(page).contains("<tr class=\"startup-row\" tabindex=\"0\" data-step=\"s1\">")
        .contains("class=\"waterfall-doc startup-doc\" data-step=\"s1\"");
    assertThat(RunReport.of("run-test", List.of(), run).render(0)).contains("data-step=\"s1\">")
        .doesNotContain("startup-doc");
  }
}
