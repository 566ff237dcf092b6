package dev.ravel.workers.generation.openai;

import dev.ravel.telemetry.spans.EngineNames;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.DoubleCounter;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.ObservableDoubleGauge;
import io.opentelemetry.api.metrics.ObservableLongGauge;
import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records what a generation worker scraped from its inference servers into the run's OTel metrics: each
 * step's {@linkplain ServerMetrics#minus delta} adds to counters (so a counter's cumulative value is the
 * server's own total since the first scrape), and gauges report the last scraped values. Names are the
 * embedded engine's where the meaning is the same ({@link EngineNames#METRIC_PREEMPTIONS},
 * {@link EngineNames#METRIC_REQUESTS} by finish reason, the running/waiting/KV-usage gauges) and
 * {@code rl.engine.server.*} for what a server exposes only as totals (tokens, summed latencies and their
 * counts). Every point carries {@code gen_ai.response.model}, {@code server.address} and
 * {@code server.port}, so the servers' series stay apart; their sum is the worker's. Pass the meter of
 * {@link EngineNames#INSTRUMENTATION_SCOPE} to have these series under the embedded engine's scope.
 *
 * <p>Thread-safe. Telemetry never breaks generation: failures are logged, never thrown.
 */
final class ServerMetricsRecorder implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ServerMetricsRecorder.class);

  private final String modelName;
  private final LongCounter preemptions;
  private final LongCounter requests;
  private final LongCounter tokens;
  private final DoubleCounter queueTimeSum;
  private final LongCounter queueTimeCount;
  private final DoubleCounter timeToFirstTokenSum;
  private final LongCounter timeToFirstTokenCount;
  private final DoubleCounter requestDurationSum;
  private final LongCounter requestDurationCount;
  private final ObservableLongGauge runningGauge;
  private final ObservableLongGauge waitingGauge;
  private final ObservableDoubleGauge kvUsageGauge;
  private final Map<Server, ServerMetrics> latest = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  /** A scraped server: its attributes on every point. */
  private record Server(String address, long port, Attributes attributes) {}

  ServerMetricsRecorder(Meter meter, String modelName) {
    this.modelName = modelName;
    // units and descriptions as EngineMetrics has them, so the two describe one instrument alike
    this.preemptions = meter.counterBuilder(EngineNames.METRIC_PREEMPTIONS).setUnit("{preemption}")
        .setDescription("Requests evicted from the running batch to be recomputed later").build();
    this.requests = meter.counterBuilder(EngineNames.METRIC_REQUESTS).setUnit("{request}")
        .setDescription("Finished requests, by finish_reason").build();
    this.tokens = meter.counterBuilder(EngineNames.METRIC_SERVER_TOKENS).setUnit("{token}")
        .setDescription("Tokens of a server's finished requests, by gen_ai.token.type (input: prompt, output: "
            + "generated)").build();
    this.queueTimeSum = seconds(meter, EngineNames.METRIC_SERVER_QUEUE_TIME_SUM,
        "Summed arrival-to-first-scheduling time of a server's requests");
    this.queueTimeCount = requestCount(meter, EngineNames.METRIC_SERVER_QUEUE_TIME_COUNT,
        EngineNames.METRIC_SERVER_QUEUE_TIME_SUM);
    this.timeToFirstTokenSum = seconds(meter, EngineNames.METRIC_SERVER_TIME_TO_FIRST_TOKEN_SUM,
        "Summed arrival-to-first-token time of a server's requests");
    this.timeToFirstTokenCount = requestCount(meter, EngineNames.METRIC_SERVER_TIME_TO_FIRST_TOKEN_COUNT,
        EngineNames.METRIC_SERVER_TIME_TO_FIRST_TOKEN_SUM);
    this.requestDurationSum = seconds(meter, EngineNames.METRIC_SERVER_REQUEST_DURATION_SUM,
        "Summed arrival-to-finish time of a server's requests");
    this.requestDurationCount = requestCount(meter, EngineNames.METRIC_SERVER_REQUEST_DURATION_COUNT,
        EngineNames.METRIC_SERVER_REQUEST_DURATION_SUM);
    this.runningGauge = meter.gaugeBuilder(EngineNames.METRIC_REQUESTS_RUNNING).ofLongs().setUnit("{request}")
        .setDescription("Requests in the running batch")
        .buildWithCallback(m -> observe((s, v) -> m.record(Math.round(v.running()), s.attributes())));
    this.waitingGauge = meter.gaugeBuilder(EngineNames.METRIC_REQUESTS_WAITING).ofLongs().setUnit("{request}")
        .setDescription("Requests waiting for admission")
        .buildWithCallback(m -> observe((s, v) -> m.record(Math.round(v.waiting()), s.attributes())));
    this.kvUsageGauge = meter.gaugeBuilder(EngineNames.METRIC_KV_CACHE_USAGE).setUnit("1")
        .setDescription("Share of the KV token budget held by running requests")
        .buildWithCallback(m -> observe((s, v) -> m.record(v.kvCacheUsage(), s.attributes())));
  }

  private static DoubleCounter seconds(Meter meter, String name, String description) {
    return meter.counterBuilder(name).ofDoubles().setUnit("s").setDescription(description).build();
  }

  private static LongCounter requestCount(Meter meter, String name, String sumName) {
    return meter.counterBuilder(name).setUnit("{request}")
        .setDescription("Requests summed in " + sumName).build();
  }

  /**
   * Adds a server's delta to the counters and keeps its gauges for the next collection.
   *
   * @param server the server's base URL ({@code http://host:port}), for {@code server.address}/{@code
   *     server.port}
   * @param delta {@code now.minus(before)} of that server (gauges: {@code now}'s)
   */
  void record(URI server, ServerMetrics delta) {
    try {
      Server s = server(server);
      Attributes a = s.attributes();
      add(preemptions, delta.preemptions(), a);
      delta.finished().forEach((reason, n) ->
          add(requests, n, a.toBuilder().put(EngineNames.FINISH_REASON, reason).build()));
      add(tokens, delta.promptTokens(),
          a.toBuilder().put(EngineNames.TOKEN_TYPE, EngineNames.TOKEN_TYPE_INPUT).build());
      add(tokens, delta.generationTokens(),
          a.toBuilder().put(EngineNames.TOKEN_TYPE, EngineNames.TOKEN_TYPE_OUTPUT).build());
      add(queueTimeSum, queueTimeCount, delta.queueTime(), a);
      add(timeToFirstTokenSum, timeToFirstTokenCount, delta.timeToFirstToken(), a);
      add(requestDurationSum, requestDurationCount, delta.e2eLatency(), a);
      latest.put(s, delta);
    } catch (RuntimeException e) {
      LOG.warn("could not record the metrics scraped from {}", server, e);
    }
  }

  /** Stops reporting gauges for {@code server} (stopped, or no longer this worker's). */
  void forget(URI server) {
    try {
      latest.remove(server(server));
    } catch (RuntimeException e) {
      LOG.warn("could not forget the metrics of {}", server, e);
    }
  }

  private Server server(URI uri) {
    String host = uri.getHost();
    if (host == null) {
      throw new IllegalArgumentException("no host in server URL " + uri);
    }
    int port = uri.getPort();
    if (port < 0) {
      port = "https".equals(uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT)) ? 443 : 80;
    }
    Attributes a = Attributes.of(EngineNames.RESPONSE_MODEL, modelName, EngineNames.SERVER_ADDRESS, host,
        EngineNames.SERVER_PORT, (long) port);
    return new Server(host, port, a);
  }

  private static void add(LongCounter counter, long n, Attributes a) {
    if (n > 0) {
      counter.add(n, a);
    }
  }

  private static void add(DoubleCounter sum, LongCounter count, ServerMetrics.Timing t, Attributes a) {
    if (t.count() > 0 || t.sumSeconds() > 0) {
      sum.add(t.sumSeconds(), a);
      add(count, t.count(), a);
    }
  }

  private void observe(BiConsumer<Server, ServerMetrics> each) {
    try {
      latest.forEach(each);
    } catch (RuntimeException e) {
      LOG.warn("could not report the scraped engine gauges", e);
    }
  }

  /** Unregisters the gauges; idempotent. Counters keep what they were given. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    runningGauge.close();
    waitingGauge.close();
    kvUsageGauge.close();
    latest.clear();
  }
}
