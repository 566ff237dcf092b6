package dev.ravel.workers.serve;

import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.RequestStats;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.datapoints.DistributionDataPoint;
import io.prometheus.metrics.core.datapoints.GaugeDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.EnumMap;
import java.util.Map;

/**
 * {@code /metrics}: the engine's numbers under vLLM's metric names, label {@code model_name}, in the
 * Prometheus text format written by the Prometheus client library. Counters and histograms are fed by
 * {@link #record} with every finished engine request (its own {@link RequestStats}), so they are exact;
 * the gauges are read from the engine's snapshot at each scrape. Bucket bounds are vLLM's.
 */
final class ServeMetrics {
  private static final double[] TTFT_BUCKETS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
      0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  private static final double[] LATENCY_BUCKETS = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
      30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

  /** vLLM's buckets of {@code request_params_n}. */
  private static final double[] N_BUCKETS = {1, 2, 5, 10, 20};

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
  private final GaugeDataPoint running;
  private final GaugeDataPoint waiting;
  private final GaugeDataPoint kvUsage;
  private final CounterDataPoint preemptions;
  private final CounterDataPoint promptTokens;
  private final CounterDataPoint generationTokens;
  private final Map<FinishReason, CounterDataPoint> finished = new EnumMap<>(FinishReason.class);
  private final DistributionDataPoint queueTime;
  private final DistributionDataPoint ttft;
  private final DistributionDataPoint e2e;
  private final DistributionDataPoint paramsN;

  ServeMetrics(String modelName) {
    running = gauge("vllm:num_requests_running", "Number of requests in model execution batches.", modelName);
    waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", modelName);
    kvUsage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", modelName);
    preemptions = counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", modelName);
    promptTokens = counter("vllm:prompt_tokens", "Number of prefill tokens processed.", modelName);
    generationTokens = counter("vllm:generation_tokens", "Number of generation tokens processed.", modelName);
    Counter success = Counter.builder().name("vllm:request_success")
        .help("Count of successfully processed requests.").labelNames("model_name", "finished_reason")
        .withoutExemplars().register(registry);
    for (FinishReason r : FinishReason.values()) {
      finished.put(r, success.labelValues(modelName, r.wireName()));
    }
    queueTime = histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
        LATENCY_BUCKETS, modelName);
    ttft = histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
        TTFT_BUCKETS, modelName);
    e2e = histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
        LATENCY_BUCKETS, modelName);
    paramsN = histogram("vllm:request_params_n", "Histogram of the n request parameter.", N_BUCKETS, modelName);
  }

  /** Counts a prompt of a completion request asked for {@code n} choices (vLLM's {@code request_params_n}). */
  void recordParamsN(int n) {
    paramsN.observe(n);
  }

  /** Counts one finished engine request (any finish reason). */
  void record(GenerationResult result) {
    RequestStats s = result.stats();
    finished.get(result.finishReason()).inc();
    preemptions.inc(s.preemptions());
    promptTokens.inc(s.promptTokens());
    generationTokens.inc(s.completionTokens());
    if (s.scheduledEpochNanos() != 0) {
      queueTime.observe(s.timeInQueue());
    }
    if (s.firstTokenEpochNanos() != 0) {
      ttft.observe(s.timeToFirstToken());
    }
    e2e.observe(s.e2e());
  }

  /** The Prometheus text exposition, gauges set from {@code engine}. */
  byte[] scrape(EngineStats engine) {
    running.set(engine.running());
    waiting.set(engine.waiting());
    kvUsage.set(engine.kvTokensUsed() / (double) engine.kvTokenBudget());
    ByteArrayOutputStream out = new ByteArrayOutputStream(8192);
    try {
      writer.write(out, registry.scrape());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  /** The content type of {@link #scrape}. */
  String contentType() {
    return writer.getContentType();
  }

  private GaugeDataPoint gauge(String name, String help, String model) {
    return Gauge.builder().name(name).help(help).labelNames("model_name").withoutExemplars().register(registry)
        .labelValues(model);
  }

  private CounterDataPoint counter(String name, String help, String model) {
    return Counter.builder().name(name).help(help).labelNames("model_name").withoutExemplars().register(registry)
        .labelValues(model);
  }

  private DistributionDataPoint histogram(String name, String help, double[] buckets, String model) {
    return Histogram.builder().name(name).help(help).classicOnly().classicUpperBounds(buckets)
        .labelNames("model_name").withoutExemplars().register(registry).labelValues(model);
  }
}
