package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.telemetry.spans.EngineNames;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.DoublePointData;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.data.PointData;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ServerMetricsRecorderTest {
  private static final URI A = URI.create("http://127.0.0.1:8001");
  private static final URI B = URI.create("http://127.0.0.1:8002/v1");

  private final InMemoryMetricReader reader = InMemoryMetricReader.create();
  private final SdkMeterProvider provider = SdkMeterProvider.builder().registerMetricReader(reader).build();
  private final ServerMetricsRecorder recorder =
      new ServerMetricsRecorder(provider.get(EngineNames.INSTRUMENTATION_SCOPE), "m");

  @AfterEach
  void close() {
    recorder.close();
    provider.close();
  }

  @Test
  void record_stepDeltas_sumToTheLastSnapshotsTotals() {
    List<ServerMetrics> scrapes = List.of(
        ServerMetrics.parse(Fixtures.vllm(4, 0.5, 1, 100, 300, 3, 1, 0.5, 4), A.toString()),
        ServerMetrics.parse(Fixtures.vllm(2, 0.75, 4, 250, 700, 6, 2, 1.25, 8), A.toString()),
        ServerMetrics.parse(Fixtures.vllm(0, 0.0, 9, 400, 1300, 11, 3, 2.5, 14), A.toString()));
    ServerMetrics previous = ServerMetrics.empty(A.toString());
    for (ServerMetrics now : scrapes) {
      recorder.record(A, now.minus(previous));
      previous = now;
    }
    ServerMetrics last = scrapes.get(2);
    Attributes server = Attributes.of(EngineNames.RESPONSE_MODEL, "m", EngineNames.SERVER_ADDRESS, "127.0.0.1",
        EngineNames.SERVER_PORT, 8001L);

    Collection<MetricData> metrics = reader.collectAllMetrics();

    assertThat(longSum(metrics, EngineNames.METRIC_PREEMPTIONS, server)).isEqualTo(last.preemptions());
    assertThat(longSum(metrics, EngineNames.METRIC_REQUESTS,
        server.toBuilder().put(EngineNames.FINISH_REASON, "stop").build())).isEqualTo(11);
    assertThat(longSum(metrics, EngineNames.METRIC_REQUESTS,
        server.toBuilder().put(EngineNames.FINISH_REASON, "length").build())).isEqualTo(3);
    assertThat(longSum(metrics, EngineNames.METRIC_SERVER_TOKENS,
        server.toBuilder().put(EngineNames.TOKEN_TYPE, EngineNames.TOKEN_TYPE_INPUT).build()))
        .isEqualTo(last.promptTokens());
    assertThat(longSum(metrics, EngineNames.METRIC_SERVER_TOKENS,
        server.toBuilder().put(EngineNames.TOKEN_TYPE, EngineNames.TOKEN_TYPE_OUTPUT).build()))
        .isEqualTo(last.generationTokens());
    assertThat(doubleSum(metrics, EngineNames.METRIC_SERVER_QUEUE_TIME_SUM, server))
        .isCloseTo(last.queueTime().sumSeconds(), within(1e-9));
    assertThat(longSum(metrics, EngineNames.METRIC_SERVER_QUEUE_TIME_COUNT, server))
        .isEqualTo(last.queueTime().count());
    assertThat(longGauge(metrics, EngineNames.METRIC_REQUESTS_RUNNING, server)).contains(0L);
    assertThat(doubleGauge(metrics, EngineNames.METRIC_KV_CACHE_USAGE, server)).contains(0.0);
  }

  @Test
  void record_twoServers_keepsTheirSeriesApart() {
    recorder.record(A, ServerMetrics.parse(Fixtures.text(Fixtures.VLLM), "a"));
    recorder.record(B, ServerMetrics.parse(Fixtures.text(Fixtures.RAVEL_SERVE), "b"));

    Collection<MetricData> metrics = reader.collectAllMetrics();

    Attributes a = Attributes.of(EngineNames.RESPONSE_MODEL, "m", EngineNames.SERVER_ADDRESS, "127.0.0.1",
        EngineNames.SERVER_PORT, 8001L);
    Attributes b = a.toBuilder().put(EngineNames.SERVER_PORT, 8002L).build();
    assertThat(longSum(metrics, EngineNames.METRIC_PREEMPTIONS, a)).isEqualTo(7);
    assertThat(longSum(metrics, EngineNames.METRIC_PREEMPTIONS, b)).isEqualTo(5);
    assertThat(longGauge(metrics, EngineNames.METRIC_REQUESTS_RUNNING, a)).contains(5L);
    assertThat(longGauge(metrics, EngineNames.METRIC_REQUESTS_RUNNING, b)).contains(1L);
    assertThat(longGauge(metrics, EngineNames.METRIC_REQUESTS_WAITING, a)).contains(1L);
    assertThat(longGauge(metrics, EngineNames.METRIC_REQUESTS_WAITING, b)).contains(2L);
    assertThat(doubleGauge(metrics, EngineNames.METRIC_KV_CACHE_USAGE, a)).contains(0.3125);
    assertThat(doubleGauge(metrics, EngineNames.METRIC_KV_CACHE_USAGE, b)).contains(0.5);
    assertThat(doubleSum(metrics, EngineNames.METRIC_SERVER_TIME_TO_FIRST_TOKEN_SUM, a)).isEqualTo(5.0);
    assertThat(longSum(metrics, EngineNames.METRIC_SERVER_REQUEST_DURATION_COUNT, b)).isEqualTo(8);
    assertThat(points(metrics, EngineNames.METRIC_PREEMPTIONS)).allSatisfy(p -> assertThat(p.getAttributes()
        .asMap()).containsKeys(EngineNames.SERVER_ADDRESS, EngineNames.SERVER_PORT, EngineNames.RESPONSE_MODEL));
  }

  @Test
  void forget_server_dropsItsGauges() {
    recorder.record(A, ServerMetrics.parse(Fixtures.text(Fixtures.VLLM), "a"));

    recorder.forget(A);

    assertThat(points(reader.collectAllMetrics(), EngineNames.METRIC_REQUESTS_RUNNING)).isEmpty();
  }

  @Test
  void record_badServerUrl_isLoggedNotThrown() {
    assertThatCode(() -> recorder.record(URI.create("not-a-url"), ServerMetrics.empty("x")))
        .doesNotThrowAnyException();
    assertThatCode(() -> recorder.forget(URI.create("/relative"))).doesNotThrowAnyException();
  }

  @Test
  void close_twice_isHarmless() {
    recorder.record(A, ServerMetrics.parse(Fixtures.text(Fixtures.VLLM), "a"));

    recorder.close();
    recorder.close();

    assertThat(points(reader.collectAllMetrics(), EngineNames.METRIC_REQUESTS_RUNNING)).isEmpty();
  }

  private static List<? extends PointData> points(Collection<MetricData> metrics, String name) {
    return metrics.stream().filter(m -> m.getName().equals(name)).flatMap(m -> m.getData().getPoints().stream())
        .toList();
  }

  private static long longSum(Collection<MetricData> metrics, String name, Attributes a) {
    return points(metrics, name).stream().filter(p -> p.getAttributes().equals(a))
        .mapToLong(p -> ((LongPointData) p).getValue()).sum();
  }

  private static double doubleSum(Collection<MetricData> metrics, String name, Attributes a) {
    return points(metrics, name).stream().filter(p -> p.getAttributes().equals(a))
        .mapToDouble(p -> ((DoublePointData) p).getValue()).sum();
  }

  private static Optional<Long> longGauge(Collection<MetricData> metrics, String name, Attributes a) {
    return points(metrics, name).stream().filter(p -> p.getAttributes().equals(a))
        .map(p -> ((LongPointData) p).getValue()).findFirst();
  }

  private static Optional<Double> doubleGauge(Collection<MetricData> metrics, String name, Attributes a) {
    return points(metrics, name).stream().filter(p -> p.getAttributes().equals(a))
        .map(p -> ((DoublePointData) p).getValue()).findFirst();
  }
}
