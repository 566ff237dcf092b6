package dev.ravel.workers.engine;

import static dev.ravel.workers.engine.Requests.batch;
import static dev.ravel.workers.engine.Requests.config;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.SpanNames;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120) // a hang guard only: nothing here asserts a duration
final class EngineTracingTest {
  private final Telemetry telemetry = new Telemetry();
  private final List<EmbeddedEngine> engines = new ArrayList<>();

  private EmbeddedEngine engine(EngineConfig config, FakeModel model) {
    EmbeddedEngine e = new EmbeddedEngine(config, model, telemetry.sdk);
    engines.add(e);
    return e;
  }

  @AfterEach
  void tearDown() {
    engines.forEach(EmbeddedEngine::close);
    telemetry.close();
  }

  private static Map<String, SpanData> byRequestId(List<SpanData> spans) {
    return spans.stream().collect(Collectors.toMap(s -> s.getAttributes().get(EngineNames.REQUEST_ID),
        Function.identity()));
  }

  @Test
  void generate_tracingOn_oneServerSpanPerRequestUnderTheCallersSpanWithVllmAttributes() throws Exception {
    EmbeddedEngine engine = engine(config().tracing(true).modelName("tiny-test").build(),
        FakeModel.of(7).eosLogit(0.5f));
    Span parent = telemetry.sdk.getTracer("test").spanBuilder("rl.worker.generate").startSpan();
    TraceCarrier carrier;
    Scope scope = parent.makeCurrent();
    try {
      carrier = TraceCarrier.current();
    } finally {
      scope.close();
    }
    List<GenerationRequest> requests = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      SamplingParams p = SamplingParams.builder().maxTokens(9).temperature(0.8).topP(0.95).seed(i).build();
      requests.add(GenerationRequest.of("s-" + i, Requests.prompt(3 + i, i), p, carrier));
    }

    List<GenerationResult> results = engine.generate(requests);
    parent.end();

    Map<String, SpanData> spans = byRequestId(telemetry.spansNamed(SpanNames.LLM_REQUEST));
    assertThat(spans).hasSize(4);
    ObjectMapper json = new ObjectMapper();
    for (GenerationResult r : results) {
      SpanData span = spans.get(r.requestId());
      RequestStats st = r.stats();
      assertThat(r.traced()).isTrue();
      assertThat(span.getKind()).isEqualTo(SpanKind.SERVER);
      assertThat(span.getTraceId()).isEqualTo(parent.getSpanContext().getTraceId());
      assertThat(span.getParentSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
      assertThat(span.getStartEpochNanos()).isEqualTo(st.arrivalEpochNanos());
      assertThat(span.getEndEpochNanos()).isEqualTo(st.finishEpochNanos());
      assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
      Attributes a = span.getAttributes();
      assertThat(a.get(AttributeKey.longKey("gen_ai.request.n"))).isEqualTo(1L);
      assertThat(a.get(AttributeKey.longKey("gen_ai.request.max_tokens"))).isEqualTo(9L);
      assertThat(a.get(AttributeKey.doubleKey("gen_ai.request.temperature"))).isEqualTo(0.8);
      assertThat(a.get(AttributeKey.doubleKey("gen_ai.request.top_p"))).isEqualTo(0.95);
      assertThat(a.get(AttributeKey.stringKey("gen_ai.response.model"))).isEqualTo("tiny-test");
      assertThat(a.get(AttributeKey.stringKey("gen_ai.request.model"))).isEqualTo("tiny-test");
      assertThat(a.get(AttributeKey.stringKey("gen_ai.operation.name"))).isEqualTo("text_completion");
      assertThat(a.get(AttributeKey.longKey("gen_ai.usage.prompt_tokens"))).isEqualTo((long) r.promptTokens().length);
      assertThat(a.get(AttributeKey.longKey("gen_ai.usage.completion_tokens")))
          .isEqualTo((long) r.completionTokens().length);
      String reasons = a.get(AttributeKey.stringKey("gen_ai.response.finish_reasons"));
      assertThat(json.readValue(reasons, String[].class)).containsExactly(r.finishReason().wireName());
      assertThat(a.get(AttributeKey.doubleKey("gen_ai.latency.e2e"))).isEqualTo(st.e2e()).isPositive();
      assertThat(a.get(AttributeKey.doubleKey("gen_ai.latency.time_in_queue"))).isEqualTo(st.timeInQueue());
      assertThat(a.get(AttributeKey.doubleKey("gen_ai.latency.time_to_first_token")))
          .isEqualTo(st.timeToFirstToken()).isPositive();
      assertThat(a.get(AttributeKey.doubleKey("gen_ai.latency.time_in_model_prefill"))).isEqualTo(st.prefill());
      assertThat(a.get(AttributeKey.doubleKey("gen_ai.latency.time_in_model_decode"))).isEqualTo(st.decode());
      assertThat(a.get(AttributeKey.doubleKey("gen_ai.latency.time_in_model_inference")))
          .isEqualTo(st.inference()).isLessThanOrEqualTo(st.e2e());
      assertThat(a.get(AttributeKey.longKey("rl.engine.preemptions"))).isZero();
      assertThat(a.get(AttributeKey.longKey("rl.weight_version"))).isEqualTo(7L);
      assertThat(a.get(EngineNames.ENGINE_KEEP_REASON)).isEqualTo("ratio");
    }
    assertThat(engine.snapshot().spansKept()).isEqualTo(4);
  }

  @Test
  void generate_requestForcedThroughAPreemption_childrenTileItsLlmRequestInLifecycleOrder() {
    // a KV budget of 16 for two requests of 3 + 8 tokens: both are admitted in the first iteration, and when
    // their 6th tokens no longer fit, b (admitted last) is evicted; it is recomputed once a has finished
    EmbeddedEngine engine = engine(config().tracing(true).kvTokenBudget(16).build(),
        FakeModel.of(3).eosLogit(FakeModel.NEVER));

    List<GenerationResult> results = engine.generate(List.of(Requests.request("a", 3, 8, 1),
        Requests.request("b", 3, 8, 2)));

    assertThat(results).extracting(r -> r.stats().preemptions()).containsExactly(0, 1);
    Map<String, SpanData> spans = byRequestId(telemetry.spansNamed(SpanNames.LLM_REQUEST));
    SpanData b = spans.get("b");
    List<SpanData> children = Lifecycle.children(telemetry.spans.getFinishedSpanItems(), b);
    assertThat(children).extracting(SpanData::getName).containsExactly(SpanNames.LLM_REQUEST_QUEUED,
        SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE, SpanNames.LLM_REQUEST_PREEMPTED,
        SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE);
    Lifecycle.assertTiles(b, children);
    assertThat(Lifecycle.durationSum(children)).isCloseTo(Lifecycle.duration(b), org.assertj.core.api.Assertions
        .within(1_000_000L));
    assertThat(children.get(1).getAttributes().get(EngineNames.USAGE_INPUT_TOKENS)).isEqualTo(3L);
    assertThat(children.get(1).getAttributes().get(EngineNames.ENGINE_RECOMPUTE)).isFalse();
    assertThat(children.get(2).getAttributes().get(EngineNames.USAGE_OUTPUT_TOKENS)).isEqualTo(6L);
    assertThat(children.get(4).getAttributes().get(EngineNames.USAGE_INPUT_TOKENS)).isEqualTo(3L + 6);
    assertThat(children.get(4).getAttributes().get(EngineNames.ENGINE_RECOMPUTE)).isTrue();
    assertThat(children.get(5).getAttributes().get(EngineNames.USAGE_OUTPUT_TOKENS)).isEqualTo(2L);
    assertThat(children).filteredOn(c -> !c.getName().equals(SpanNames.LLM_REQUEST_QUEUED)
            && !c.getName().equals(SpanNames.LLM_REQUEST_PREEMPTED))
        .allSatisfy(c -> assertThat(c.getAttributes().get(EngineNames.WEIGHT_VERSION)).isEqualTo(3L));
    // the preempted child starts at the preempted event, and the first two match vLLM's latencies on the parent
    assertThat(children.get(3).getStartEpochNanos()).isEqualTo(b.getEvents().get(0).getEpochNanos());
    assertThat(Lifecycle.duration(children.get(0)) / 1e9)
        .isEqualTo(b.getAttributes().get(EngineNames.LATENCY_TIME_IN_QUEUE));
    assertThat(Lifecycle.duration(children.get(1)) / 1e9)
        .isEqualTo(b.getAttributes().get(EngineNames.LATENCY_TIME_IN_MODEL_PREFILL));

    SpanData a = spans.get("a");
    List<SpanData> aChildren = Lifecycle.children(telemetry.spans.getFinishedSpanItems(), a);
    assertThat(aChildren).extracting(SpanData::getName).containsExactly(SpanNames.LLM_REQUEST_QUEUED,
        SpanNames.LLM_REQUEST_PREFILL, SpanNames.LLM_REQUEST_DECODE);
    Lifecycle.assertTiles(a, aChildren);
    assertThat(aChildren.get(2).getAttributes().get(EngineNames.USAGE_OUTPUT_TOKENS)).isEqualTo(8L);
    // the spans of the two sampled requests: two parents, 3 + 6 children, nothing else
    assertThat(telemetry.spans.getFinishedSpanItems()).hasSize(2 + 3 + 6);
  }

  @Test
  void generate_sampledOutRequest_hasNeitherItsSpanNorChildren() {
    EmbeddedEngine engine = engine(config().tracing(true).sampleRatio(0).build(), FakeModel.of(1));

    engine.generate(batch("out", 5, 3));

    assertThat(telemetry.spans.getFinishedSpanItems()).isEmpty();
    assertThat(engine.snapshot().spansSampledOut()).isEqualTo(5);
  }

  @Test
  void generate_tracingOff_noSpansAndMetricsStillExact() {
    EmbeddedEngine engine = engine(config().tracing(false).slowRequest(Duration.ZERO).build(), FakeModel.of(1));

    List<GenerationResult> results = engine.generate(batch("off", 12, 5));

    assertThat(telemetry.spans.getFinishedSpanItems()).isEmpty();
    assertThat(results).noneMatch(GenerationResult::traced);
    assertThat(engine.snapshot().spansKept()).isZero();
    assertThat(engine.snapshot().spansSampledOut()).isZero();
    assertThat(counterSum(EngineNames.METRIC_REQUESTS)).isEqualTo(12);
  }

  @Test
  void sampler_ratioTenPercent_keepsAboutATenthByRequestIdWhileCountingEveryRequest() {
    int n = 1000;
    EmbeddedEngine engine = engine(config().tracing(true).sampleRatio(0.1).slowRequest(Duration.ofHours(1)).build(),
        FakeModel.of(1));

    List<GenerationResult> results = engine.generate(batch("r", n, 2));

    List<SpanData> kept = telemetry.spansNamed(SpanNames.LLM_REQUEST);
    // Binomial(1000, 0.1): mean 100, standard deviation sqrt(1000 * 0.1 * 0.9) = 9.5; allow 4 of them.
    assertThat(kept.size()).isBetween(62, 138);
    Map<String, SpanData> spans = byRequestId(kept);
    for (GenerationResult r : results) {
      boolean inShare = RequestSampler.unitHash(r.requestId()) < 0.1;
      assertThat(r.traced()).as(r.requestId()).isEqualTo(inShare);
      assertThat(spans.containsKey(r.requestId())).as(r.requestId()).isEqualTo(inShare);
    }
    EngineStats stats = engine.snapshot();
    assertThat(stats.spansKept()).isEqualTo(kept.size());
    assertThat(stats.spansKept() + stats.spansSampledOut()).isEqualTo(n);
    assertThat(counterSum(EngineNames.METRIC_REQUESTS)).isEqualTo(n);
    assertThat(histogram(EngineNames.METRIC_TOKEN_USAGE, EngineNames.TOKEN_TYPE_OUTPUT).getCount()).isEqualTo(n);
  }

  @Test
  void sampler_ratioZero_stillKeepsErroredAndPreemptedRequests() {
    EmbeddedEngine engine = engine(
        config().tracing(true).sampleRatio(0).slowRequest(Duration.ofHours(1)).kvTokenBudget(40).build(),
        FakeModel.of(1).eosLogit(FakeModel.NEVER));
    List<GenerationRequest> requests = new ArrayList<>(batch("z", 6, 24));
    requests.add(GenerationRequest.of("too-big", Requests.prompt(50, 1), Requests.params(4, 1), null));

    List<GenerationResult> results = engine.generate(requests);

    Map<String, SpanData> spans = byRequestId(telemetry.spansNamed(SpanNames.LLM_REQUEST));
    assertThat(results).anyMatch(r -> r.stats().preemptions() > 0);
    for (GenerationResult r : results) {
      boolean mustKeep = r.finishReason() == FinishReason.ERROR || r.stats().preemptions() > 0;
      assertThat(r.traced()).as(r.requestId()).isEqualTo(mustKeep);
      assertThat(spans.containsKey(r.requestId())).as(r.requestId()).isEqualTo(mustKeep);
    }
    SpanData error = spans.get("too-big");
    assertThat(error.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(error.getStatus().getDescription()).contains("50 tokens");
    assertThat(error.getAttributes().get(EngineNames.RESPONSE_FINISH_REASONS)).isEqualTo("[\"error\"]");
    assertThat(error.getAttributes().get(EngineNames.ENGINE_KEEP_REASON)).isEqualTo("error");
    for (GenerationResult r : results) {
      if (r.stats().preemptions() > 0) {
        SpanData span = spans.get(r.requestId());
        assertThat(span.getAttributes().get(EngineNames.ENGINE_PREEMPTIONS)).isEqualTo((long) r.stats().preemptions());
        assertThat(span.getAttributes().get(EngineNames.ENGINE_KEEP_REASON)).isEqualTo("preempted");
        assertThat(span.getEvents()).extracting(EventData::getName)
            .containsOnly(EngineNames.EVENT_PREEMPTED).hasSize(r.stats().preemptions());
        assertThat(span.getEvents()).allSatisfy(e -> assertThat(e.getEpochNanos())
            .isBetween(span.getStartEpochNanos(), span.getEndEpochNanos()));
      }
    }
    assertThat(counterSum(EngineNames.METRIC_PREEMPTIONS)).isEqualTo(engine.snapshot().preemptions());
  }

  @Test
  void sampler_parentBased_followsTheCallersSampledFlagOnly() {
    EmbeddedEngine engine = engine(config().tracing(true).sampleRatio(0).slowRequest(Duration.ZERO).parentBased(true)
        .build(), FakeModel.of(1));
    io.opentelemetry.api.trace.SpanContext sampled = io.opentelemetry.api.trace.SpanContext.create(
        "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", io.opentelemetry.api.trace.TraceFlags.getSampled(),
        io.opentelemetry.api.trace.TraceState.getDefault());
    io.opentelemetry.api.trace.SpanContext unsampled = io.opentelemetry.api.trace.SpanContext.create(
        "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203332", io.opentelemetry.api.trace.TraceFlags.getDefault(),
        io.opentelemetry.api.trace.TraceState.getDefault());
    List<GenerationRequest> requests = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      io.opentelemetry.context.Context c = io.opentelemetry.context.Context.root()
          .with(Span.wrap(i % 3 == 0 ? sampled : unsampled));
      TraceCarrier carrier;
      try (Scope ignored = c.makeCurrent()) {
        carrier = TraceCarrier.current();
      }
      requests.add(GenerationRequest.of("p-" + i, Requests.prompt(3, i), Requests.params(3, i), carrier));
    }
    requests.add(GenerationRequest.of("root", Requests.prompt(3, 9), Requests.params(3, 9), null)); // no traceparent

    List<GenerationResult> results = engine.generate(requests);

    // slow and ratio 0 are not asked: the flag alone decides, a request without a traceparent is a sampled root
    Map<String, SpanData> spans = byRequestId(telemetry.spansNamed(SpanNames.LLM_REQUEST));
    assertThat(spans).containsOnlyKeys("p-0", "p-3", "root");
    assertThat(spans.values()).allSatisfy(s -> assertThat(s.getAttributes().get(EngineNames.ENGINE_KEEP_REASON))
        .isEqualTo(RequestSampler.PARENT));
    assertThat(results).filteredOn(GenerationResult::traced).hasSize(3);
    assertThat(engine.snapshot().spansSampledOut()).isEqualTo(4);
  }

  @Test
  void sampler_slowRequests_areAlwaysKept() {
    EmbeddedEngine engine = engine(config().tracing(true).sampleRatio(0).slowRequest(Duration.ZERO).build(),
        FakeModel.of(1));

    List<GenerationResult> results = engine.generate(batch("slow", 5, 3));

    assertThat(results).allMatch(GenerationResult::traced);
    assertThat(telemetry.spansNamed(SpanNames.LLM_REQUEST)).hasSize(5)
        .allSatisfy(s -> assertThat(s.getAttributes().get(EngineNames.ENGINE_KEEP_REASON)).isEqualTo("slow"));
  }

  @Test
  void metrics_afterABatch_histogramsUseTheGenAiBucketsAndMatchTheResults() {
    EmbeddedEngine engine = engine(config().modelName("m1").build(), FakeModel.of(1).eosLogit(0.5f));

    List<GenerationResult> results = engine.generate(batch("m", 20, 8));

    long promptTokens = results.stream().mapToLong(r -> r.promptTokens().length).sum();
    long completionTokens = results.stream().mapToLong(r -> r.completionTokens().length).sum();
    HistogramPointData input = histogram(EngineNames.METRIC_TOKEN_USAGE, EngineNames.TOKEN_TYPE_INPUT);
    HistogramPointData output = histogram(EngineNames.METRIC_TOKEN_USAGE, EngineNames.TOKEN_TYPE_OUTPUT);
    assertThat(input.getCount()).isEqualTo(20);
    assertThat((long) input.getSum()).isEqualTo(promptTokens);
    assertThat((long) output.getSum()).isEqualTo(completionTokens);
    assertThat(input.getBoundaries()).containsExactlyElementsOf(
        EngineNames.TOKEN_USAGE_BUCKETS.stream().map(Long::doubleValue).toList());
    assertThat(input.getAttributes().get(EngineNames.RESPONSE_MODEL)).isEqualTo("m1");
    assertThat(telemetry.metric(EngineNames.METRIC_TOKEN_USAGE).getUnit()).isEqualTo("{token}");

    assertBuckets(EngineNames.METRIC_REQUEST_DURATION, EngineNames.REQUEST_DURATION_BUCKETS, 20);
    assertBuckets(EngineNames.METRIC_TIME_TO_FIRST_TOKEN, EngineNames.TIME_TO_FIRST_TOKEN_BUCKETS, 20);
    long multiToken = results.stream().filter(r -> r.completionTokens().length > 1).count();
    assertBuckets(EngineNames.METRIC_TIME_PER_OUTPUT_TOKEN, EngineNames.TIME_PER_OUTPUT_TOKEN_BUCKETS, multiToken);
    assertBuckets(EngineNames.METRIC_QUEUE_TIME, EngineNames.REQUEST_DURATION_BUCKETS, 20);
    HistogramPointData e2e = single(telemetry.metric(EngineNames.METRIC_REQUEST_DURATION));
    assertThat(e2e.getSum()).isCloseTo(results.stream().mapToDouble(r -> r.stats().e2e()).sum(),
        org.assertj.core.api.Assertions.within(1e-6));

    MetricData requests = telemetry.metric(EngineNames.METRIC_REQUESTS);
    EngineStats stats = engine.snapshot();
    for (LongPointData p : requests.getLongSumData().getPoints()) {
      String reason = p.getAttributes().get(EngineNames.FINISH_REASON);
      FinishReason r = FinishReason.valueOf(reason.toUpperCase(java.util.Locale.ROOT));
      assertThat(p.getValue()).isEqualTo(stats.requestsFinished(r));
    }
    assertThat(gauge(EngineNames.METRIC_REQUESTS_RUNNING)).isZero();
    assertThat(gauge(EngineNames.METRIC_REQUESTS_WAITING)).isZero();
    assertThat(telemetry.metric(EngineNames.METRIC_KV_CACHE_USAGE).getDoubleGaugeData().getPoints())
        .singleElement().satisfies(p -> assertThat(p.getValue()).isZero());
  }

  @Test
  void metrics_gauges_reportTheLoadWhileRequestsRun() throws Exception {
    // two slots, a KV budget that never forces a preemption and requests that cannot finish on their own (no EOS,
    // a million tokens): once two run, the load stays 2 running + 3 waiting until close(), however slow the machine
    EmbeddedEngine engine = engine(config().maxRunningRequests(2).kvTokenBudget(10_000_000).build(),
        FakeModel.of(1).eosLogit(FakeModel.NEVER).delayed(1_000_000));
    List<java.util.concurrent.CompletableFuture<GenerationResult>> futures = new ArrayList<>();
    for (GenerationRequest r : batch("g", 5, 1_000_000)) {
      futures.add(engine.submit(r));
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (engine.snapshot().running() < 2 && System.nanoTime() < deadline) {
      Thread.sleep(2);
    }
    assertThat(engine.snapshot().running()).as("requests running").isEqualTo(2);

    assertThat(gauge(EngineNames.METRIC_REQUESTS_RUNNING)).isEqualTo(2);
    assertThat(gauge(EngineNames.METRIC_REQUESTS_WAITING)).isEqualTo(3);
    double usage = telemetry.metric(EngineNames.METRIC_KV_CACHE_USAGE).getDoubleGaugeData().getPoints().iterator()
        .next().getValue();
    assertThat(usage).isGreaterThan(0).isLessThanOrEqualTo(1);
    engine.close();
    assertThat(futures).allSatisfy(f -> assertThat(f.join().finishReason()).isEqualTo(FinishReason.ABORT));
  }

  private void assertBuckets(String metric, List<Double> buckets, long count) {
    MetricData m = telemetry.metric(metric);
    assertThat(m.getUnit()).isEqualTo("s");
    HistogramPointData p = single(m);
    assertThat(p.getBoundaries()).as(metric).containsExactlyElementsOf(buckets);
    assertThat(p.getCount()).as(metric).isEqualTo(count);
    assertThat(p.getAttributes().get(EngineNames.RESPONSE_MODEL)).isNotBlank();
  }

  private static HistogramPointData single(MetricData m) {
    assertThat(m.getHistogramData().getPoints()).hasSize(1);
    return m.getHistogramData().getPoints().iterator().next();
  }

  private HistogramPointData histogram(String metric, String tokenType) {
    return telemetry.metric(metric).getHistogramData().getPoints().stream()
        .filter(p -> tokenType.equals(p.getAttributes().get(EngineNames.TOKEN_TYPE))).findFirst()
        .orElseThrow(() -> new AssertionError("no " + tokenType + " point in " + metric));
  }

  private long counterSum(String metric) {
    return telemetry.metric(metric).getLongSumData().getPoints().stream().mapToLong(LongPointData::getValue).sum();
  }

  private long gauge(String metric) {
    return telemetry.metric(metric).getLongGaugeData().getPoints().iterator().next().getValue();
  }
}
