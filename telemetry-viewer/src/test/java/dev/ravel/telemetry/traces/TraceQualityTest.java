package dev.ravel.telemetry.traces;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TraceQualityTest {
  private static final String TRACE = "0".repeat(31) + "1";

  private static SpanRecord span(int id, int parent, String name, String role) {
    return new SpanRecord(TRACE, String.format("%016x", id), parent == 0 ? "" : String.format("%016x", parent), name,
        1, 0, 1, 0, "", Map.of(), Map.of("rl.process.role", role), List.of(), List.of(), "test");
  }

  @Test
  void figures_noSpansToMeasure_areEmptyNotComplete() {
    // a run whose workers exported nothing: only the driver's step
    TraceQuality q = TraceQuality.of(List.of(span(1, 0, "rl.grpo.step", "driver")));

    assertThat(q.engineRequests()).isEmpty();
    assertThat(q.workerSpans()).isEmpty();
    assertThat(q.generationCoverage()).isEmpty();
    assertThat(q.connectedness()).isEmpty();
    assertThat(q.disconnected()).isEmpty();
  }

  @Test
  void figures_everySpanInPlace_areOne() {
    TraceQuality q = TraceQuality.of(List.of(
        span(1, 0, "rl.grpo.step", "driver"),
        span(2, 1, "rl.vllm.generate", "driver"),
        span(3, 2, "rl.worker.generate", "generation_worker"),
        span(4, 3, "llm_request", "generation_worker")));

    assertThat(q.engineRequests()).hasSize(1);
    assertThat(q.workerSpans()).hasSize(2);
    assertThat(q.generationCoverage()).hasValue(1.0);
    assertThat(q.connectedness()).hasValue(1.0);
  }

  @Test
  void workerSpans_anInferenceServersOwnStartupTrace_isLeftOutAndShownApart() {
    String startupTrace = "0".repeat(31) + "2";
    SpanRecord loading = new SpanRecord(startupTrace, String.format("%016x", 50), "", "Overall Loading", 1, 0, 1, 0,
        "", Map.of(), Map.of("rl.process.role", "inference_server"), List.of(), List.of(), "test");
    TraceQuality q = TraceQuality.of(List.of(
        span(1, 0, "rl.grpo.step", "driver"),
        span(2, 1, "rl.vllm.generate", "driver"),
        span(3, 2, "rl.worker.generate", "generation_worker"),
        span(4, 3, "llm_request", "inference_server"),
        loading));

    assertThat(q.serverStartupSpans()).containsExactly(loading);
    assertThat(q.workerSpans()).extracting(SpanRecord::name).containsExactly("rl.worker.generate", "llm_request");
    assertThat(q.connectedness()).hasValue(1.0);
    assertThat(q.generationCoverage()).hasValue(1.0);
  }

  @Test
  void workerSpans_theRunsStartupTrace_isLeftOutAndItsServerSpansAreServerStartup() {
    String startup = "0".repeat(31) + "4";
    java.util.function.BiFunction<Integer, Integer, java.util.function.BiFunction<String, String, SpanRecord>> in =
        (id, parent) -> (name, role) -> new SpanRecord(startup, String.format("%016x", id),
            parent == 0 ? "" : String.format("%016x", parent), name, 1, 0, 1, 0, "", Map.of(),
            Map.of("rl.process.role", role), List.of(), List.of(), "test");
    SpanRecord root = in.apply(70, 0).apply("rl.run.startup", "driver");
    SpanRecord backend = in.apply(72, 71).apply("rl.worker.start_backend", "generation_worker");
    SpanRecord loading = in.apply(73, 72).apply("Overall Loading", "inference_server");
    TraceQuality q = TraceQuality.of(List.of(
        span(1, 0, "rl.grpo.step", "driver"),
        span(3, 1, "rl.worker.generate", "generation_worker"),
        root, in.apply(71, 70).apply("rl.run.actors.generation_worker", "driver"), backend, loading));

    assertThat(q.workerSpans()).extracting(SpanRecord::name).containsExactly("rl.worker.generate");
    assertThat(q.connectedness()).hasValue(1.0);
    assertThat(q.runStartupSpans()).hasSize(4).contains(root, backend, loading);
    assertThat(q.serverStartupSpans()).containsExactly(loading);
  }

  @Test
  void workerSpans_aStartupSpanWhoseRootIsMissing_isDisconnected() {
    // the start-up's root never reached the files (the driver died): its worker spans are not start-up then
    SpanRecord orphan = new SpanRecord("0".repeat(31) + "5", String.format("%016x", 80), String.format("%016x", 79),
        "rl.trainer.load_model", 1, 0, 1, 0, "", Map.of(), Map.of("rl.process.role", "policy_trainer"), List.of(),
        List.of(), "test");
    TraceQuality q = TraceQuality.of(List.of(span(1, 0, "rl.grpo.step", "driver"), orphan));

    assertThat(q.disconnected()).containsExactly(orphan);
  }

  @Test
  void serverStartupSpans_anEngineRequestAloneInItsTrace_isNotStartupButDisconnected() {
    // a traceparent that did not reach the server: its request is a root of its own
    SpanRecord lost = new SpanRecord("0".repeat(31) + "3", String.format("%016x", 60), "", "llm_request", 2, 0, 1, 0,
        "", Map.of(), Map.of("rl.process.role", "inference_server"), List.of(), List.of(), "test");
    TraceQuality q = TraceQuality.of(List.of(span(1, 0, "rl.grpo.step", "driver"), lost));

    assertThat(q.serverStartupSpans()).isEmpty();
    assertThat(q.connectedness()).hasValue(0.0);
    assertThat(q.generationCoverage()).hasValue(0.0);
  }

  @Test
  void figures_aRequestOutsideAnyGenerateCallAndAMissingParent_countAgainstEach() {
    TraceQuality q = TraceQuality.of(List.of(
        span(1, 0, "rl.grpo.step", "driver"),
        span(2, 1, "rl.vllm.generate", "driver"),
        span(3, 2, "rl.worker.generate", "generation_worker"),
        span(4, 3, "llm_request", "generation_worker"),
        span(5, 1, "llm_request", "generation_worker"), // in the step, under no generate call
        span(6, 99, "rl.trainer.train", "trainer"))); // its parent was never exported

    assertThat(q.generationCoverage()).hasValue(0.5);
    assertThat(q.connectedness()).hasValue(3.0 / 4);
    assertThat(q.disconnected()).extracting(SpanRecord::name).containsExactly("rl.trainer.train");
  }
}
