package dev.ravel.workers.engine;

import static dev.ravel.workers.engine.Requests.config;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.SpanNames;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Finishing requests by hand, with scripted timestamps, into an in-memory SDK. */
final class RequestTelemetryTest {
  private final Telemetry otel = new Telemetry();
  private final AtomicLong now = new AtomicLong();

  @AfterEach
  void closeSdk() {
    otel.close();
  }

  private RequestTelemetry telemetry(EngineConfig config) {
    return new RequestTelemetry(config, otel.sdk.getTracer("test"),
        new EngineMetrics(otel.sdk.getMeter("test"), config.modelName()), now::get);
  }

  /** Request {@code id} with prompt {1, 2, 3} and maxTokens 5, arrived at 1000 ns. */
  private static Sequence arrived(String id) {
    return new Sequence(GenerationRequest.of(id, new int[] {1, 2, 3}, Requests.params(5, 1), TraceCarrier.EMPTY),
        1_000);
  }

  /** Scheduled at 2000, tokens 4 and 5 at 3000 and 5000 from weight version 7 (recorded as the scheduler does). */
  private static Sequence decodedTwoTokens(String id) {
    Sequence s = arrived(id);
    s.scheduled = 2_000;
    s.phases.prefill(2_000, 3, 7);
    s.append(4, -0.5f);
    s.firstToken = 3_000;
    s.phases.tokenSampled(3_000, 7);
    s.append(5, -1.5f);
    s.lastToken = 5_000;
    s.phases.tokenSampled(5_000, 7);
    s.lastTokenVersion = 7;
    return s;
  }

  @Test
  void finish_scriptedTimestamps_resultStatsAndSpanCarryThem() {
    RequestTelemetry telemetry = telemetry(config().tracing(true).modelName("m").build());
    Sequence s = decodedTwoTokens("r");
    now.set(9_000);

    telemetry.finish(s, FinishReason.LENGTH, "not an error");

    GenerationResult r = s.future.join();
    assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
    assertThat(r.completionTokens()).containsExactly(4, 5);
    assertThat(r.logprobs()).containsExactly(-0.5f, -1.5f);
    assertThat(r.weightVersion()).isEqualTo(7);
    assertThat(r.error()).isNull();
    assertThat(r.traced()).isTrue();
    RequestStats st = r.stats();
    assertThat(st.arrivalEpochNanos()).isEqualTo(1_000);
    assertThat(st.scheduledEpochNanos()).isEqualTo(2_000);
    assertThat(st.firstTokenEpochNanos()).isEqualTo(3_000);
    assertThat(st.finishEpochNanos()).isEqualTo(9_000);
    assertThat(st.prefillNanos()).isEqualTo(1_000);
    assertThat(st.decodeNanos()).isEqualTo(2_000);
    assertThat(st.promptTokens()).isEqualTo(3);
    assertThat(st.completionTokens()).isEqualTo(2);

    assertThat(otel.spansNamed(SpanNames.LLM_REQUEST)).singleElement().satisfies(span -> {
      assertThat(span.getStartEpochNanos()).isEqualTo(1_000);
      assertThat(span.getEndEpochNanos()).isEqualTo(9_000);
      assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
      assertThat(span.getParentSpanContext().isValid()).isFalse();
      assertThat(span.getAttributes().get(EngineNames.REQUEST_ID)).isEqualTo("r");
      assertThat(span.getAttributes().get(EngineNames.REQUEST_MODEL)).isEqualTo("m");
      assertThat(span.getAttributes().get(EngineNames.REQUEST_MAX_TOKENS)).isEqualTo(5L);
      assertThat(span.getAttributes().get(EngineNames.WEIGHT_VERSION)).isEqualTo(7L);
      assertThat(span.getAttributes().get(EngineNames.LATENCY_TIME_IN_MODEL_PREFILL)).isEqualTo(st.prefill());
      assertThat(span.getAttributes().get(EngineNames.LATENCY_TIME_IN_MODEL_DECODE)).isEqualTo(st.decode());
      assertThat(span.getAttributes().get(EngineNames.ENGINE_KEEP_REASON)).isEqualTo("ratio");
      assertThat(span.getEvents()).isEmpty();
    });
    SpanData parent = otel.spansNamed(SpanNames.LLM_REQUEST).get(0);
    List<SpanData> children = Lifecycle.children(otel.spans.getFinishedSpanItems(), parent);
    assertThat(children).extracting(SpanData::getName).containsExactly(SpanNames.LLM_REQUEST_QUEUED,
        SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE);
    assertThat(children).extracting(SpanData::getStartEpochNanos).containsExactly(1_000L, 2_000L, 3_000L);
    assertThat(children).extracting(SpanData::getEndEpochNanos).containsExactly(2_000L, 3_000L, 9_000L);
    Lifecycle.assertTiles(parent, children);
    assertThat(children.get(1).getAttributes().get(EngineNames.USAGE_INPUT_TOKENS)).isEqualTo(3L);
    assertThat(children.get(1).getAttributes().get(EngineNames.ENGINE_RECOMPUTE)).isFalse();
    assertThat(children.get(1).getAttributes().get(EngineNames.WEIGHT_VERSION)).isEqualTo(7L);
    assertThat(children.get(2).getAttributes().get(EngineNames.USAGE_OUTPUT_TOKENS)).isEqualTo(2L);
    assertThat(children.get(2).getAttributes().get(EngineNames.WEIGHT_VERSION)).isEqualTo(7L);
    assertThat(children.get(0).getAttributes().isEmpty()).isTrue();
    assertThat(telemetry.finishedCounts()[FinishReason.LENGTH.ordinal()]).isEqualTo(1);
    assertThat(telemetry.promptTokens()).isEqualTo(3);
    assertThat(telemetry.generationTokens()).isEqualTo(2);
    assertThat(telemetry.spansKept()).isEqualTo(1);
    assertThat(telemetry.spansSampledOut()).isZero();
  }

  @Test
  void finish_calledTwice_onlyTheFirstCountsAndCompletes() {
    RequestTelemetry telemetry = telemetry(config().tracing(true).build());
    Sequence s = decodedTwoTokens("twice");
    now.set(6_000);

    telemetry.finish(s, FinishReason.STOP, null);
    telemetry.finish(s, FinishReason.ERROR, "late");

    assertThat(s.future.join().finishReason()).isEqualTo(FinishReason.STOP);
    assertThat(telemetry.finishedCounts()).containsExactly(1, 0, 0, 0);
    assertThat(telemetry.generationTokens()).isEqualTo(2);
    assertThat(otel.spansNamed(SpanNames.LLM_REQUEST)).hasSize(1);
  }

  @Test
  void finish_errorNeverScheduled_keptWithErrorStatusAndNoModelTime() {
    RequestTelemetry telemetry = telemetry(config().tracing(true).sampleRatio(0).build());
    Sequence s = arrived("bad");
    now.set(1_500);

    telemetry.finish(s, FinishReason.ERROR, "boom");

    GenerationResult r = s.future.join();
    assertThat(r.error()).isEqualTo("boom");
    assertThat(r.stats().scheduledEpochNanos()).isZero();
    assertThat(r.stats().prefillNanos()).isZero();
    assertThat(r.stats().decodeNanos()).isZero();
    assertThat(otel.spansNamed(SpanNames.LLM_REQUEST)).singleElement().satisfies(span -> {
      assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
      assertThat(span.getStatus().getDescription()).isEqualTo("boom");
      assertThat(span.getAttributes().get(EngineNames.ENGINE_KEEP_REASON)).isEqualTo("error");
      assertThat(span.getAttributes().get(EngineNames.RESPONSE_FINISH_REASONS)).isEqualTo("[\"error\"]");
    });
  }

  @Test
  void preemptedAndWeightUpdated_becomeTimedSpanEventsWithTheirAttributes() {
    RequestTelemetry telemetry = telemetry(config().tracing(true).sampleRatio(0)
        .slowRequest(Duration.ofHours(1)).build());
    Sequence s = decodedTwoTokens("p");
    now.set(5_500);
    s.preemptions++;
    telemetry.preempted(s, now.get());
    telemetry.weightUpdated(s, 6_000, 9);
    now.set(7_000);

    telemetry.finish(s, FinishReason.LENGTH, null);

    SpanData span = otel.spansNamed(SpanNames.LLM_REQUEST).get(0);
    assertThat(span.getAttributes().get(EngineNames.ENGINE_KEEP_REASON)).isEqualTo("preempted");
    assertThat(span.getAttributes().get(EngineNames.ENGINE_PREEMPTIONS)).isEqualTo(1L);
    assertThat(span.getEvents()).extracting(EventData::getName)
        .containsExactly(EngineNames.EVENT_PREEMPTED, EngineNames.EVENT_WEIGHT_UPDATE);
    assertThat(span.getEvents()).extracting(EventData::getEpochNanos).containsExactly(5_500L, 6_000L);
    assertThat(span.getEvents().get(0).getAttributes().get(EngineNames.USAGE_COMPLETION_TOKENS)).isEqualTo(2L);
    assertThat(span.getEvents().get(1).getAttributes().get(EngineNames.WEIGHT_VERSION)).isEqualTo(9L);
    assertThat(telemetry.preemptions()).isEqualTo(1);
    assertThat(otel.metric(EngineNames.METRIC_PREEMPTIONS).getLongSumData().getPoints())
        .singleElement().satisfies(p -> assertThat(p.getValue()).isEqualTo(1));
  }

  @Test
  void finish_samplerDropsTheRequest_countedSampledOutWithoutASpanButWithMetrics() {
    RequestTelemetry telemetry = telemetry(config().tracing(true).sampleRatio(0)
        .slowRequest(Duration.ofHours(1)).build());
    Sequence s = decodedTwoTokens("dropped");
    now.set(6_000);

    telemetry.finish(s, FinishReason.STOP, null);

    assertThat(s.future.join().traced()).isFalse();
    assertThat(otel.spans.getFinishedSpanItems()).isEmpty();
    assertThat(telemetry.spansSampledOut()).isEqualTo(1);
    assertThat(telemetry.spansKept()).isZero();
    assertThat(otel.metric(EngineNames.METRIC_REQUESTS).getLongSumData().getPoints())
        .singleElement().satisfies(p -> assertThat(p.getValue()).isEqualTo(1));
  }

  @Test
  void finish_sdkSamplerDropsAKeptSpan_notTracedAndCountedNeitherKeptNorSampledOut() {
    InMemorySpanExporter exporter = InMemorySpanExporter.create();
    try (SdkTracerProvider tracing = SdkTracerProvider.builder().setSampler(Sampler.alwaysOff())
        .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build()) {
      EngineConfig config = config().tracing(true).build();
      RequestTelemetry telemetry = new RequestTelemetry(config, tracing.get("test"),
          new EngineMetrics(otel.sdk.getMeter("test"), config.modelName()), now::get);
      Sequence s = decodedTwoTokens("off");
      now.set(6_000);

      telemetry.finish(s, FinishReason.STOP, null);

      assertThat(s.future.join().traced()).isFalse();
      assertThat(exporter.getFinishedSpanItems()).isEmpty();
      assertThat(telemetry.spansKept()).isZero();
      assertThat(telemetry.spansSampledOut()).isZero();
      assertThat(telemetry.finishedCounts()[FinishReason.STOP.ordinal()]).isEqualTo(1);
    }
  }
}
