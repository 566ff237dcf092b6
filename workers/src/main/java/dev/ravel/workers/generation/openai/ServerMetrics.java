package dev.ravel.workers.generation.openai;

import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BinaryOperator;
import org.hawkular.agent.prometheus.text.TextPrometheusMetricDataParser;
import org.hawkular.agent.prometheus.types.Counter;
import org.hawkular.agent.prometheus.types.Gauge;
import org.hawkular.agent.prometheus.types.Histogram;
import org.hawkular.agent.prometheus.types.Metric;
import org.hawkular.agent.prometheus.types.MetricFamily;

/**
 * What Ravel reads from one inference server's Prometheus {@code /metrics} (vLLM's metric names, which
 * {@code ravel serve} exposes too): counters and histogram sums/counts are totals since the server
 * started, gauges are the values at the scrape. The text is parsed by the Prometheus text-format parser of
 * {@code org.hawkular.agent:prometheus-scraper} (text format 0.0.4, as Python's {@code prometheus_client}
 * and the Prometheus Java client write it).
 *
 * <p>When a name has several label sets (vLLM labels its series by {@code model_name} and, with several
 * engines, {@code engine}) the values are summed, except the KV-cache usage share, which is their mean (a
 * sum of shares would exceed 1). A name the server does not expose reads as 0. Immutable.
 */
final class ServerMetrics {
  static final String REQUESTS_RUNNING = "vllm:num_requests_running";
  static final String REQUESTS_WAITING = "vllm:num_requests_waiting";
  static final String KV_CACHE_USAGE = "vllm:kv_cache_usage_perc";
  /** The name of {@link #KV_CACHE_USAGE} in older vLLM releases (read when the newer one is absent). */
  static final String GPU_CACHE_USAGE = "vllm:gpu_cache_usage_perc";
  static final String PREEMPTIONS = "vllm:num_preemptions_total";
  static final String PROMPT_TOKENS = "vllm:prompt_tokens_total";
  static final String GENERATION_TOKENS = "vllm:generation_tokens_total";
  static final String REQUEST_SUCCESS = "vllm:request_success_total";
  static final String FINISHED_REASON_LABEL = "finished_reason";
  static final String QUEUE_TIME = "vllm:request_queue_time_seconds";
  static final String TIME_TO_FIRST_TOKEN = "vllm:time_to_first_token_seconds";
  static final String E2E_LATENCY = "vllm:e2e_request_latency_seconds";

  /** The KV budget each server of unknown budget counts as in {@link #toEngineStats}. */
  static final int KV_SHARE_SCALE = 10_000;

  /**
   * Sum and count of a Prometheus histogram.
   *
   * @param sumSeconds the observations summed
   * @param count the number of observations
   */
  record Timing(double sumSeconds, long count) {
    static final Timing NONE = new Timing(0, 0);

    /** The delta since {@code earlier}; when the count or sum went down (a restart): this one. */
    Timing minus(Timing earlier) {
      if (count < earlier.count || sumSeconds < earlier.sumSeconds) {
        return this;
      }
      return new Timing(sumSeconds - earlier.sumSeconds, count - earlier.count);
    }

    /** Mean seconds per observation, 0 with none. */
    double meanSeconds() {
      return count == 0 ? 0 : sumSeconds / count;
    }
  }

  private final String source;
  private final double running;
  private final double waiting;
  private final double kvCacheUsage;
  private final long preemptions;
  private final long promptTokens;
  private final long generationTokens;
  private final Map<String, Long> finished;
  private final Timing queueTime;
  private final Timing timeToFirstToken;
  private final Timing e2eLatency;

  private ServerMetrics(String source, double running, double waiting, double kvCacheUsage, long preemptions,
      long promptTokens, long generationTokens, Map<String, Long> finished, Timing queueTime,
      Timing timeToFirstToken, Timing e2eLatency) {
    this.source = source;
    this.running = running;
    this.waiting = waiting;
    this.kvCacheUsage = kvCacheUsage;
    this.preemptions = preemptions;
    this.promptTokens = promptTokens;
    this.generationTokens = generationTokens;
    this.finished = Collections.unmodifiableMap(new TreeMap<>(finished));
    this.queueTime = queueTime;
    this.timeToFirstToken = timeToFirstToken;
    this.e2eLatency = e2eLatency;
  }

  /** All zeros: the "earlier" snapshot of a server not scraped before. */
  static ServerMetrics empty(String source) {
    return new ServerMetrics(source, 0, 0, 0, 0, 0, 0, Map.of(), Timing.NONE, Timing.NONE, Timing.NONE);
  }

  /**
   * Parses a {@code /metrics} body.
   *
   * @param text the Prometheus text
   * @param source where it came from (the URL), named in errors
   * @throws IllegalArgumentException when {@code text} is not empty yet holds no metric family in
   *     Prometheus text format (an HTML or JSON error page, a binary body)
   */
  static ServerMetrics parse(String text, String source) {
    Map<String, MetricFamily> families = families(text, source);
    if (families.isEmpty() && !text.isBlank()) {
      throw new IllegalArgumentException(source + ": not Prometheus text format (no metric family in "
          + text.length() + " characters starting " + quote(text) + ")");
    }
    Map<String, Long> finished = new TreeMap<>();
    MetricFamily success = families.get(REQUEST_SUCCESS);
    if (success != null) {
      for (Metric m : success.getMetrics()) {
        String reason = m.getLabels().getOrDefault(FINISHED_REASON_LABEL, "");
        finished.merge(reason, count(value(m)), Long::sum);
      }
    }
    double kvUsage = families.containsKey(KV_CACHE_USAGE)
        ? mean(families.get(KV_CACHE_USAGE)) : mean(families.get(GPU_CACHE_USAGE));
    return new ServerMetrics(source, sum(families.get(REQUESTS_RUNNING)), sum(families.get(REQUESTS_WAITING)),
        kvUsage, count(sum(families.get(PREEMPTIONS))), count(sum(families.get(PROMPT_TOKENS))),
        count(sum(families.get(GENERATION_TOKENS))), finished, timing(families.get(QUEUE_TIME)),
        timing(families.get(TIME_TO_FIRST_TOKEN)), timing(families.get(E2E_LATENCY)));
  }

  private static Map<String, MetricFamily> families(String text, String source) {
    Map<String, MetricFamily> families = new HashMap<>();
    try (InputStream in = new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8))) {
      TextPrometheusMetricDataParser parser = new TextPrometheusMetricDataParser(in);
      for (MetricFamily f = parser.parse(); f != null; f = parser.parse()) {
        families.putIfAbsent(f.getName(), f);
      }
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(source + ": not Prometheus text format: " + e.getMessage(), e);
    }
    return families;
  }

  private static String quote(String text) {
    String head = text.strip();
    head = head.length() > 40 ? head.substring(0, 40) + "..." : head;
    return '"' + head.replace("\n", "\\n") + '"';
  }

  private static double value(Metric m) {
    double v;
    if (m instanceof Counter c) {
      v = c.getValue();
    } else if (m instanceof Gauge g) {
      v = g.getValue();
    } else {
      return 0;
    }
    return Double.isFinite(v) ? v : 0;
  }

  private static double sum(MetricFamily family) {
    if (family == null) {
      return 0;
    }
    double total = 0;
    for (Metric m : family.getMetrics()) {
      total += value(m);
    }
    return total;
  }

  private static double mean(MetricFamily family) {
    return family == null || family.getMetrics().isEmpty() ? 0 : sum(family) / family.getMetrics().size();
  }

  private static long count(double value) {
    return Math.max(0, Math.round(value));
  }

  private static Timing timing(MetricFamily family) {
    if (family == null) {
      return Timing.NONE;
    }
    double sum = 0;
    long count = 0;
    for (Metric m : family.getMetrics()) {
      if (m instanceof Histogram h) {
        sum += Double.isFinite(h.getSampleSum()) ? h.getSampleSum() : 0;
        count += h.getSampleCount();
      }
    }
    return new Timing(sum, count);
  }

  /**
   * The change since {@code earlier} (a snapshot of the same server): counters and histogram sums/counts
   * are differences, gauges are this snapshot's values. A counter lower here than in {@code earlier} means
   * the server restarted in between (its counters started again from 0), so its delta is this snapshot's
   * value; a histogram is reset when its count or its sum went down. Restarts are judged on the values
   * summed over label sets.
   */
  ServerMetrics minus(ServerMetrics earlier) {
    Map<String, Long> finishedDelta = new TreeMap<>();
    finished.forEach((reason, n) -> finishedDelta.put(reason, counterDelta(n, earlier.finished.getOrDefault(reason, 0L))));
    return new ServerMetrics(source, running, waiting, kvCacheUsage,
        counterDelta(preemptions, earlier.preemptions), counterDelta(promptTokens, earlier.promptTokens),
        counterDelta(generationTokens, earlier.generationTokens), finishedDelta,
        queueTime.minus(earlier.queueTime), timeToFirstToken.minus(earlier.timeToFirstToken),
        e2eLatency.minus(earlier.e2eLatency));
  }

  private static long counterDelta(long now, long before) {
    return now < before ? now : now - before;
  }

  /**
   * The {@link EngineStats} of a generation worker's servers, summed. Finished requests are vLLM's
   * {@code finished_reason}s mapped by {@link FinishReason#wireName()} (a reason Ravel does not know is left
   * out). The KV cache is known only as a share: with {@code kvTokenBudgetPerServer > 0} (the budget Ravel
   * gave the servers it launched) the used tokens are the share times that budget, rounded, which is an
   * approximation (vLLM counts blocks, not tokens); with 0 (a server configured elsewhere) each server counts
   * as a budget of {@link #KV_SHARE_SCALE} and its share is scaled to it, so used/budget is the mean share.
   * Spans kept and sampled out are the server's own business, not visible over HTTP: 0.
   */
  static EngineStats toEngineStats(Collection<ServerMetrics> servers, int kvTokenBudgetPerServer) {
    if (kvTokenBudgetPerServer < 0) {
      throw new IllegalArgumentException("kvTokenBudgetPerServer: must be at least 0 (got "
          + kvTokenBudgetPerServer + ")");
    }
    int perServer = kvTokenBudgetPerServer > 0 ? kvTokenBudgetPerServer : KV_SHARE_SCALE;
    ServerMetrics total = servers.stream().reduce(empty("servers"), SUM);
    long kvUsed = 0;
    for (ServerMetrics s : servers) {
      kvUsed += Math.round(Math.min(1, Math.max(0, s.kvCacheUsage)) * perServer);
    }
    EngineStats.Builder b = EngineStats.builder()
        .preemptions(total.preemptions)
        .running(Math.toIntExact(Math.round(total.running)))
        .waiting(Math.toIntExact(Math.round(total.waiting)))
        .kvTokens(Math.toIntExact(kvUsed), Math.multiplyExact(perServer, servers.size()))
        .tokens(total.promptTokens, total.generationTokens)
        .queue(Math.max(0, Math.round(total.queueTime.sumSeconds * 1e9)), Math.max(0, (long) total.queueTime.count))
        .spans(0, 0);
    for (FinishReason r : FinishReason.values()) {
      b.finished(r, total.finished.getOrDefault(r.wireName(), 0L));
    }
    return b.build();
  }

  private static final BinaryOperator<ServerMetrics> SUM = (a, b) -> {
    Map<String, Long> finished = new TreeMap<>(a.finished);
    b.finished.forEach((reason, n) -> finished.merge(reason, n, Long::sum));
    return new ServerMetrics(a.source, a.running + b.running, a.waiting + b.waiting, 0,
        a.preemptions + b.preemptions, a.promptTokens + b.promptTokens, a.generationTokens + b.generationTokens,
        finished, new Timing(a.queueTime.sumSeconds + b.queueTime.sumSeconds, a.queueTime.count + b.queueTime.count),
        new Timing(a.timeToFirstToken.sumSeconds + b.timeToFirstToken.sumSeconds,
            a.timeToFirstToken.count + b.timeToFirstToken.count),
        new Timing(a.e2eLatency.sumSeconds + b.e2eLatency.sumSeconds, a.e2eLatency.count + b.e2eLatency.count));
  };

  /** Where the snapshot came from, as the caller named it (the URL). */
  String source() {
    return source;
  }

  /** {@value #REQUESTS_RUNNING}: requests in the running batch(es). */
  double running() {
    return running;
  }

  /** {@value #REQUESTS_WAITING}: requests waiting to be scheduled. */
  double waiting() {
    return waiting;
  }

  /** {@value #KV_CACHE_USAGE} (or {@value #GPU_CACHE_USAGE}): share of the KV cache in use, 0..1. */
  double kvCacheUsage() {
    return kvCacheUsage;
  }

  /** {@value #PREEMPTIONS}. */
  long preemptions() {
    return preemptions;
  }

  /** {@value #PROMPT_TOKENS}. */
  long promptTokens() {
    return promptTokens;
  }

  /** {@value #GENERATION_TOKENS}. */
  long generationTokens() {
    return generationTokens;
  }

  /** {@value #REQUEST_SUCCESS} by its {@value #FINISHED_REASON_LABEL} label ({@code stop}, {@code length}...). */
  Map<String, Long> finished() {
    return finished;
  }

  /** {@value #REQUEST_SUCCESS}, all reasons. */
  long finishedTotal() {
    return finished.values().stream().mapToLong(Long::longValue).sum();
  }

  /** {@value #QUEUE_TIME}'s sum and count. */
  Timing queueTime() {
    return queueTime;
  }

  /** {@value #TIME_TO_FIRST_TOKEN}'s sum and count. */
  Timing timeToFirstToken() {
    return timeToFirstToken;
  }

  /** {@value #E2E_LATENCY}'s sum and count. */
  Timing e2eLatency() {
    return e2eLatency;
  }

  @Override
  public String toString() {
    return "ServerMetrics{" + source + ": running=" + running + ", waiting=" + waiting + ", kv=" + kvCacheUsage
        + ", preemptions=" + preemptions + ", promptTokens=" + promptTokens + ", generationTokens="
        + generationTokens + ", finished=" + finished + ", queue=" + queueTime + ", ttft=" + timeToFirstToken
        + ", e2e=" + e2eLatency + "}";
  }
}
