package dev.ravel.telemetry.spans;

import io.opentelemetry.api.common.AttributeKey;
import java.util.List;

/**
 * Every name the inference engine emits, in one place: the attributes of its {@code llm_request} span
 * (vLLM's names, so dashboards made for vLLM read Ravel's spans unchanged) and of its lifecycle children
 * ({@link SpanNames#LLM_REQUEST_QUEUED} and the others), its span events, and its
 * metrics (the OpenTelemetry GenAI semantic conventions, status Development, plus Ravel's own
 * {@code rl.engine.*} ones) with the explicit bucket boundaries the conventions advise.
 *
 * <p>The span name itself is {@link SpanNames#LLM_REQUEST}. Latencies are in seconds (doubles), token
 * counts are longs.
 */
public final class EngineNames {
  private EngineNames() {}

  /** Instrumentation scope of the engine's tracer and meter. */
  public static final String INSTRUMENTATION_SCOPE = "dev.ravel.workers.engine";

  /** Value of {@link #OPERATION_NAME} for the engine's completions. */
  public static final String OPERATION_TEXT_COMPLETION = "text_completion";

  // ---------------------------------------------------------------- llm_request span: vLLM's attributes

  /** The engine's request id. */
  public static final AttributeKey<String> REQUEST_ID = AttributeKey.stringKey("gen_ai.request.id");
  /** Number of completions asked for (always 1 here). */
  public static final AttributeKey<Long> REQUEST_N = AttributeKey.longKey("gen_ai.request.n");
  public static final AttributeKey<Long> REQUEST_MAX_TOKENS = AttributeKey.longKey("gen_ai.request.max_tokens");
  public static final AttributeKey<Double> REQUEST_TEMPERATURE = AttributeKey.doubleKey("gen_ai.request.temperature");
  public static final AttributeKey<Double> REQUEST_TOP_P = AttributeKey.doubleKey("gen_ai.request.top_p");
  /** The served model's name; also an attribute of every {@code gen_ai.*} metric. */
  public static final AttributeKey<String> RESPONSE_MODEL = AttributeKey.stringKey("gen_ai.response.model");
  public static final AttributeKey<Long> USAGE_PROMPT_TOKENS = AttributeKey.longKey("gen_ai.usage.prompt_tokens");
  public static final AttributeKey<Long> USAGE_COMPLETION_TOKENS =
      AttributeKey.longKey("gen_ai.usage.completion_tokens");
  /** A JSON-encoded array of finish reasons, for example {@code ["stop"]} (a string, as vLLM writes it). */
  public static final AttributeKey<String> RESPONSE_FINISH_REASONS =
      AttributeKey.stringKey("gen_ai.response.finish_reasons");
  /** Arrival to first scheduling, seconds. */
  public static final AttributeKey<Double> LATENCY_TIME_IN_QUEUE = AttributeKey.doubleKey("gen_ai.latency.time_in_queue");
  /** Arrival to first generated token, seconds. */
  public static final AttributeKey<Double> LATENCY_TIME_TO_FIRST_TOKEN =
      AttributeKey.doubleKey("gen_ai.latency.time_to_first_token");
  /** Arrival to finish, seconds. */
  public static final AttributeKey<Double> LATENCY_E2E = AttributeKey.doubleKey("gen_ai.latency.e2e");
  /** First scheduling to first token, seconds. */
  public static final AttributeKey<Double> LATENCY_TIME_IN_MODEL_PREFILL =
      AttributeKey.doubleKey("gen_ai.latency.time_in_model_prefill");
  /** First token to last token, seconds. */
  public static final AttributeKey<Double> LATENCY_TIME_IN_MODEL_DECODE =
      AttributeKey.doubleKey("gen_ai.latency.time_in_model_decode");
  /** Prefill plus decode, seconds. */
  public static final AttributeKey<Double> LATENCY_TIME_IN_MODEL_INFERENCE =
      AttributeKey.doubleKey("gen_ai.latency.time_in_model_inference");

  // ---------------------------------------------------------------- llm_request span: GenAI and Ravel extras

  public static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("gen_ai.operation.name");
  public static final AttributeKey<String> REQUEST_MODEL = AttributeKey.stringKey("gen_ai.request.model");
  /** Times the request was preempted (and later recomputed). */
  public static final AttributeKey<Long> ENGINE_PREEMPTIONS = AttributeKey.longKey("rl.engine.preemptions");
  /** Why the engine's sampler kept the span: {@code error}, {@code preempted}, {@code slow} or {@code ratio}. */
  public static final AttributeKey<String> ENGINE_KEEP_REASON = AttributeKey.stringKey("rl.engine.keep_reason");
  /** The weight version that produced the request's last token (same key as on Ravel's own spans). */
  public static final AttributeKey<Long> WEIGHT_VERSION = RavelAttributes.WEIGHT_VERSION;

  // ---------------------------------------------------------------- children of llm_request (its lifecycle)

  /**
   * On {@code llm_request.prefill}: the tokens it ran through the model (the prompt, and on a recompute the
   * tokens generated before it too). The GenAI semantic conventions' name.
   */
  public static final AttributeKey<Long> USAGE_INPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.input_tokens");
  /** On {@code llm_request.decode}: the completion tokens sampled in it (GenAI semantic conventions' name). */
  public static final AttributeKey<Long> USAGE_OUTPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.output_tokens");
  /** On {@code llm_request.prefill}: whether it recomputed a cache dropped by a preemption or a weight update. */
  public static final AttributeKey<Boolean> ENGINE_RECOMPUTE = AttributeKey.booleanKey("rl.engine.recompute");

  /** Span event: the request was evicted from the running batch (its KV cache dropped). */
  public static final String EVENT_PREEMPTED = "preempted";
  /** Span event: new weights were loaded while the request ran; its KV cache was recomputed. */
  public static final String EVENT_WEIGHT_UPDATE = "weight_update";

  // ---------------------------------------------------------------- metrics (GenAI conventions)

  /** Histogram, {@code {token}}, with {@link #TOKEN_TYPE}: tokens per request. */
  public static final String METRIC_TOKEN_USAGE = "gen_ai.client.token.usage";
  /** Histogram, seconds: arrival to finish. */
  public static final String METRIC_REQUEST_DURATION = "gen_ai.server.request.duration";
  /** Histogram, seconds: arrival to first generated token. */
  public static final String METRIC_TIME_TO_FIRST_TOKEN = "gen_ai.server.time_to_first_token";
  /** Histogram, seconds: per output token after the first. */
  public static final String METRIC_TIME_PER_OUTPUT_TOKEN = "gen_ai.server.time_per_output_token";

  /** {@code input} or {@code output}, on {@link #METRIC_TOKEN_USAGE}. */
  public static final AttributeKey<String> TOKEN_TYPE = AttributeKey.stringKey("gen_ai.token.type");
  public static final String TOKEN_TYPE_INPUT = "input";
  public static final String TOKEN_TYPE_OUTPUT = "output";

  /** Advised boundaries of {@link #METRIC_TOKEN_USAGE}: 1, then x4 up to 67108864. */
  public static final List<Long> TOKEN_USAGE_BUCKETS = List.of(1L, 4L, 16L, 64L, 256L, 1024L, 4096L, 16384L,
      65536L, 262144L, 1048576L, 4194304L, 16777216L, 67108864L);
  /** Advised boundaries of {@link #METRIC_REQUEST_DURATION} (seconds): 0.01 doubling to 81.92. */
  public static final List<Double> REQUEST_DURATION_BUCKETS = List.of(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64,
      1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92);
  /** Advised boundaries of {@link #METRIC_TIME_TO_FIRST_TOKEN} (seconds). */
  public static final List<Double> TIME_TO_FIRST_TOKEN_BUCKETS = List.of(0.001, 0.005, 0.01, 0.02, 0.04, 0.06,
      0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0);
  /** Advised boundaries of {@link #METRIC_TIME_PER_OUTPUT_TOKEN} (seconds). */
  public static final List<Double> TIME_PER_OUTPUT_TOKEN_BUCKETS = List.of(0.01, 0.025, 0.05, 0.075, 0.1, 0.15,
      0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5);

  // ---------------------------------------------------------------- metrics (Ravel's engine)

  /** Histogram, seconds: arrival to first scheduling (boundaries as {@link #REQUEST_DURATION_BUCKETS}). */
  public static final String METRIC_QUEUE_TIME = "rl.engine.queue_time";
  /** Counter, {@code {preemption}}. */
  public static final String METRIC_PREEMPTIONS = "rl.engine.preemptions";
  /** Counter, {@code {request}}, with {@link #FINISH_REASON}: finished requests. */
  public static final String METRIC_REQUESTS = "rl.engine.requests";
  /** Gauge, {@code {request}}: requests in the running batch. */
  public static final String METRIC_REQUESTS_RUNNING = "rl.engine.requests.running";
  /** Gauge, {@code {request}}: requests waiting to be admitted. */
  public static final String METRIC_REQUESTS_WAITING = "rl.engine.requests.waiting";
  /** Gauge, {@code 1}: share of the KV token budget held by running requests, 0..1. */
  public static final String METRIC_KV_CACHE_USAGE = "rl.engine.kv_cache.usage";

  /** {@code stop}, {@code length}, {@code abort} or {@code error}, on {@link #METRIC_REQUESTS}. */
  public static final AttributeKey<String> FINISH_REASON = AttributeKey.stringKey("finish_reason");

  // ---------------------------------------------------------------- metrics scraped from inference servers
  //
  // With generation.backend=openai each worker scrapes its servers' Prometheus /metrics (vLLM's names) and
  // records the deltas under the names above where the meaning is the same: METRIC_PREEMPTIONS,
  // METRIC_REQUESTS (by FINISH_REASON) and the gauges METRIC_REQUESTS_RUNNING, METRIC_REQUESTS_WAITING,
  // METRIC_KV_CACHE_USAGE. A server exposes per-request distributions only as histogram sums and counts, so
  // these totals get names of their own. Every point carries SERVER_ADDRESS and SERVER_PORT.

  /** Counter, {@code {token}}, with {@link #TOKEN_TYPE}: prompt (input) and generated (output) tokens. */
  public static final String METRIC_SERVER_TOKENS = "rl.engine.server.tokens";
  /** Counter, seconds: summed arrival-to-first-scheduling time of a server's finished requests. */
  public static final String METRIC_SERVER_QUEUE_TIME_SUM = "rl.engine.server.queue_time.sum";
  /** Counter, {@code {request}}: the requests summed in {@link #METRIC_SERVER_QUEUE_TIME_SUM}. */
  public static final String METRIC_SERVER_QUEUE_TIME_COUNT = "rl.engine.server.queue_time.count";
  /** Counter, seconds: summed arrival-to-first-token time. */
  public static final String METRIC_SERVER_TIME_TO_FIRST_TOKEN_SUM = "rl.engine.server.time_to_first_token.sum";
  /** Counter, {@code {request}}: the requests summed in {@link #METRIC_SERVER_TIME_TO_FIRST_TOKEN_SUM}. */
  public static final String METRIC_SERVER_TIME_TO_FIRST_TOKEN_COUNT = "rl.engine.server.time_to_first_token.count";
  /** Counter, seconds: summed arrival-to-finish time (end-to-end latency). */
  public static final String METRIC_SERVER_REQUEST_DURATION_SUM = "rl.engine.server.request.duration.sum";
  /** Counter, {@code {request}}: the requests summed in {@link #METRIC_SERVER_REQUEST_DURATION_SUM}. */
  public static final String METRIC_SERVER_REQUEST_DURATION_COUNT = "rl.engine.server.request.duration.count";

  /** The scraped server's host (OTel semantic conventions' {@code server.address}). */
  public static final AttributeKey<String> SERVER_ADDRESS = AttributeKey.stringKey("server.address");
  /** The scraped server's port (OTel semantic conventions' {@code server.port}). */
  public static final AttributeKey<Long> SERVER_PORT = AttributeKey.longKey("server.port");
}
