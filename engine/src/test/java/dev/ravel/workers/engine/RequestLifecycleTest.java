package dev.ravel.workers.engine;

import static dev.ravel.workers.engine.Requests.config;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.SpanNames;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The children of {@code llm_request} (queued, prefill, decode, preempted) with the scheduler driven step by step
 * on the test thread: a fake model, a clock that moves 1 ns per reading, spans in memory.
 */
final class RequestLifecycleTest {
  private final AtomicLong now = new AtomicLong(1_000);
  private final Telemetry otel = new Telemetry();
  private RequestTelemetry telemetry;

  @AfterEach
  void closeSdk() {
    otel.close();
  }

  private BatchScheduler scheduler(EngineConfig config, FakeModel model) {
    EngineMetrics metrics = new EngineMetrics(otel.sdk.getMeter("test"), config.modelName());
    telemetry = new RequestTelemetry(config, otel.sdk.getTracer("test"), metrics, now::incrementAndGet);
    return new BatchScheduler(config, model, telemetry, now::incrementAndGet);
  }

  private Sequence sequence(String id, int promptLength, int maxTokens) {
    return new Sequence(GenerationRequest.of(id, Requests.prompt(promptLength, 0), Requests.params(maxTokens, 1),
        TraceCarrier.EMPTY), now.incrementAndGet());
  }

  private SpanData llmRequest(String id) {
    return otel.spansNamed(SpanNames.LLM_REQUEST).stream()
        .filter(s -> id.equals(s.getAttributes().get(EngineNames.REQUEST_ID))).findFirst()
        .orElseThrow(() -> new AssertionError("no llm_request " + id));
  }

  private List<SpanData> children(SpanData parent) {
    return Lifecycle.children(otel.spans.getFinishedSpanItems(), parent);
  }

  private static FakeModel endless(long version) {
    return FakeModel.of(version).eosLogit(FakeModel.NEVER);
  }

  @Test
  void weightUpdateMidRequest_oneDecodePerVersionWithARecomputingPrefillBetween() {
    BatchScheduler scheduler = scheduler(config().tracing(true).build(), endless(1));
    Sequence a = sequence("a", 3, 4);
    scheduler.step(List.of(a));
    scheduler.step(List.of());
    scheduler.updateModel(endless(2));
    scheduler.step(List.of());
    scheduler.step(List.of());

    GenerationResult r = a.future.join();
    assertThat(r.versionSpans()).containsExactly(new VersionSpan(1, 0, 2), new VersionSpan(2, 2, 4));
    SpanData span = llmRequest("a");
    List<SpanData> children = children(span);
    assertThat(children).extracting(SpanData::getName).containsExactly(SpanNames.LLM_REQUEST_QUEUED,
        SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE, SpanNames.LLM_REQUEST_PREFILL,
        SpanNames.LLM_REQUEST_DECODE);
    Lifecycle.assertTiles(span, children);
    assertThat(children).extracting(c -> c.getAttributes().get(EngineNames.WEIGHT_VERSION))
        .containsExactly(null, 1L, 1L, 2L, 2L);
    assertThat(children).extracting(c -> c.getAttributes().get(EngineNames.ENGINE_RECOMPUTE))
        .containsExactly(null, false, null, true, null);
    assertThat(children).extracting(c -> c.getAttributes().get(EngineNames.USAGE_INPUT_TOKENS))
        .containsExactly(null, 3L, null, 5L, null);
    // each decode holds the tokens of one version span
    assertThat(children).extracting(c -> c.getAttributes().get(EngineNames.USAGE_OUTPUT_TOKENS))
        .containsExactly(null, null, 2L, null, 2L);
    // the boundaries are the instants the engine recorded: admission, first token, the weight update
    RequestStats st = r.stats();
    assertThat(children.get(1).getStartEpochNanos()).isEqualTo(st.scheduledEpochNanos());
    assertThat(children.get(2).getStartEpochNanos()).isEqualTo(st.firstTokenEpochNanos());
    EventData update = span.getEvents().get(0);
    assertThat(update.getName()).isEqualTo(EngineNames.EVENT_WEIGHT_UPDATE);
    assertThat(children.get(3).getStartEpochNanos()).isEqualTo(update.getEpochNanos());
  }

  @Test
  void preemptedThenAborted_theLastChildIsPreemptedUntilTheFinish() {
    BatchScheduler scheduler = scheduler(config().tracing(true).kvTokenBudget(8).build(), endless(1));
    Sequence a = sequence("a", 3, 20);
    Sequence b = sequence("b", 3, 20);
    scheduler.step(List.of(a, b));
    scheduler.step(List.of()); // a's second token does not fit beside b's: b is evicted
    assertThat(b.preemptions).isEqualTo(1);

    // closing: the engine loop drains the scheduler and aborts what it held
    for (Sequence s : scheduler.drain()) {
      telemetry.finish(s, FinishReason.ABORT, null);
    }

    SpanData span = llmRequest("b");
    List<SpanData> children = children(span);
    assertThat(children).extracting(SpanData::getName).containsExactly(SpanNames.LLM_REQUEST_QUEUED,
        SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE, SpanNames.LLM_REQUEST_PREEMPTED);
    Lifecycle.assertTiles(span, children);
    assertThat(children.get(2).getAttributes().get(EngineNames.USAGE_OUTPUT_TOKENS)).isEqualTo(2L);
    assertThat(children.get(3).getStartEpochNanos()).isEqualTo(span.getEvents().get(0).getEpochNanos());
    assertThat(children(llmRequest("a"))).extracting(SpanData::getName).containsExactly(
        SpanNames.LLM_REQUEST_QUEUED, SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE);
  }

  @Test
  void rejectedAtIntake_onlyQueuedSpanningTheWholeRequest() {
    BatchScheduler scheduler = scheduler(config().tracing(true).kvTokenBudget(8).build(), endless(1));
    Sequence big = sequence("big", 9, 2);

    scheduler.step(List.of(big));

    assertThat(big.future.join().finishReason()).isEqualTo(FinishReason.ERROR);
    SpanData span = llmRequest("big");
    List<SpanData> children = children(span);
    assertThat(children).extracting(SpanData::getName).containsExactly(SpanNames.LLM_REQUEST_QUEUED);
    Lifecycle.assertTiles(span, children);
  }

  @Test
  void tracingOff_noSpansAtAll() {
    BatchScheduler scheduler = scheduler(config().tracing(false).build(), endless(1));
    Sequence a = sequence("a", 3, 2);

    scheduler.step(List.of(a));
    scheduler.step(List.of());

    assertThat(a.future.join().finishReason()).isEqualTo(FinishReason.LENGTH);
    assertThat(otel.spans.getFinishedSpanItems()).isEmpty();
  }
}
