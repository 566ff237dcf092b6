package dev.ravel.workers.engine;

import dev.ravel.telemetry.spans.EngineNames;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.LongHistogram;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.ObservableDoubleGauge;
import io.opentelemetry.api.metrics.ObservableLongGauge;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.DoubleSupplier;
import java.util.function.IntSupplier;

/**
 * The engine's OTel instruments: the GenAI histograms (with the conventions' advised buckets), queue time,
 * preemption and finished-request counters, and gauges over the scheduler's published state. Recording is
 * thread-safe; every finished request is recorded whatever the span sampler decides.
 */
final class EngineMetrics implements AutoCloseable {
  private final LongHistogram tokenUsage;
  private final DoubleHistogram requestDuration;
  private final DoubleHistogram timeToFirstToken;
  private final DoubleHistogram timePerOutputToken;
  private final DoubleHistogram queueTime;
  private final LongCounter preemptions;
  private final LongCounter requests;
  private final Meter meter;
  private ObservableLongGauge runningGauge;
  private ObservableLongGauge waitingGauge;
  private ObservableDoubleGauge kvUsageGauge;

  private final AtomicBoolean closed = new AtomicBoolean();
  private final Attributes engine;
  private final Attributes model;
  private final Attributes input;
  private final Attributes output;
  private final Map<FinishReason, Attributes> byReason = new EnumMap<>(FinishReason.class);

  /** The histograms and counters; the gauges come with {@link #registerGauges}. */
  EngineMetrics(Meter meter, String modelName) {
    this.meter = meter;
    this.model = Attributes.of(EngineNames.RESPONSE_MODEL, modelName,
        EngineNames.OPERATION_NAME, EngineNames.OPERATION_TEXT_COMPLETION);
    this.input = model.toBuilder().put(EngineNames.TOKEN_TYPE, EngineNames.TOKEN_TYPE_INPUT).build();
    this.output = model.toBuilder().put(EngineNames.TOKEN_TYPE, EngineNames.TOKEN_TYPE_OUTPUT).build();
    for (FinishReason r : FinishReason.values()) {
      byReason.put(r, Attributes.of(EngineNames.RESPONSE_MODEL, modelName, EngineNames.FINISH_REASON, r.wireName()));
    }
    this.engine = Attributes.of(EngineNames.RESPONSE_MODEL, modelName);

    this.tokenUsage = meter.histogramBuilder(EngineNames.METRIC_TOKEN_USAGE).ofLongs().setUnit("{token}")
        .setDescription("Tokens per request, by gen_ai.token.type (input: prompt, output: completion)")
        .setExplicitBucketBoundariesAdvice(EngineNames.TOKEN_USAGE_BUCKETS).build();
    this.requestDuration = seconds(meter, EngineNames.METRIC_REQUEST_DURATION,
        "Request arrival to finish", EngineNames.REQUEST_DURATION_BUCKETS);
    this.timeToFirstToken = seconds(meter, EngineNames.METRIC_TIME_TO_FIRST_TOKEN,
        "Request arrival to its first generated token", EngineNames.TIME_TO_FIRST_TOKEN_BUCKETS);
    this.timePerOutputToken = seconds(meter, EngineNames.METRIC_TIME_PER_OUTPUT_TOKEN,
        "Time per generated token after the first", EngineNames.TIME_PER_OUTPUT_TOKEN_BUCKETS);
    this.queueTime = seconds(meter, EngineNames.METRIC_QUEUE_TIME,
        "Request arrival to first admission to the running batch", EngineNames.REQUEST_DURATION_BUCKETS);
    this.preemptions = meter.counterBuilder(EngineNames.METRIC_PREEMPTIONS).setUnit("{preemption}")
        .setDescription("Requests evicted from the running batch to be recomputed later").build();
    this.requests = meter.counterBuilder(EngineNames.METRIC_REQUESTS).setUnit("{request}")
        .setDescription("Finished requests, by finish_reason").build();
  }

  /**
   * Registers the gauges over the scheduler's published state. Called once, by the engine's constructor
   * (the gauges read the scheduler, which needs these instruments to exist first).
   */
  void registerGauges(IntSupplier running, IntSupplier waiting, DoubleSupplier kvUsage) {
    runningGauge = meter.gaugeBuilder(EngineNames.METRIC_REQUESTS_RUNNING).ofLongs().setUnit("{request}")
        .setDescription("Requests in the running batch")
        .buildWithCallback(m -> m.record(running.getAsInt(), engine));
    waitingGauge = meter.gaugeBuilder(EngineNames.METRIC_REQUESTS_WAITING).ofLongs().setUnit("{request}")
        .setDescription("Requests waiting for admission")
        .buildWithCallback(m -> m.record(waiting.getAsInt(), engine));
    kvUsageGauge = meter.gaugeBuilder(EngineNames.METRIC_KV_CACHE_USAGE).setUnit("1")
        .setDescription("Share of the KV token budget held by running requests")
        .buildWithCallback(m -> m.record(kvUsage.getAsDouble(), engine));
  }

  private static DoubleHistogram seconds(Meter meter, String name, String description, List<Double> buckets) {
    return meter.histogramBuilder(name).setUnit("s").setDescription(description)
        .setExplicitBucketBoundariesAdvice(buckets).build();
  }

  void recordPreemption() {
    preemptions.add(1, engine);
  }

  void recordFinished(RequestStats stats, FinishReason reason, long lastTokenEpochNanos) {
    requests.add(1, byReason.get(reason));
    tokenUsage.record(stats.promptTokens(), input);
    tokenUsage.record(stats.completionTokens(), output);
    requestDuration.record(stats.e2e(), model);
    queueTime.record(stats.timeInQueue(), model);
    if (stats.firstTokenEpochNanos() != 0) {
      timeToFirstToken.record(stats.timeToFirstToken(), model);
      if (stats.completionTokens() > 1) {
        double perToken = (lastTokenEpochNanos - stats.firstTokenEpochNanos()) / 1e9 / (stats.completionTokens() - 1);
        timePerOutputToken.record(perToken, model);
      }
    }
  }

  /** Unregisters the gauges; idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (runningGauge != null) {
      runningGauge.close();
      waitingGauge.close();
      kvUsageGauge.close();
    }
  }
}
