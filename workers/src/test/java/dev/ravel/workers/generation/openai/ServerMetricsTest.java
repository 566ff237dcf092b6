package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ServerMetricsTest {
  private static final String URL = "http://127.0.0.1:8000/metrics";

  @Test
  void parse_vllmOutput_sumsTheEnginesLabelSets() {
    ServerMetrics m = ServerMetrics.parse(Fixtures.text(Fixtures.VLLM), URL);

    assertThat(m.source()).isEqualTo(URL);
    assertThat(m.running()).isEqualTo(5.0);
    assertThat(m.waiting()).isEqualTo(1.0);
    assertThat(m.kvCacheUsage()).as("mean of the engines' shares").isEqualTo(0.3125);
    assertThat(m.preemptions()).isEqualTo(7);
    assertThat(m.promptTokens()).isEqualTo(2000);
    assertThat(m.generationTokens()).isEqualTo(4500);
    assertThat(m.finished()).containsExactlyInAnyOrderEntriesOf(Map.of("stop", 16L, "length", 7L, "abort", 1L));
    assertThat(m.finishedTotal()).isEqualTo(24);
    assertThat(m.queueTime()).isEqualTo(new ServerMetrics.Timing(1.9375, 24));
    assertThat(m.timeToFirstToken()).isEqualTo(new ServerMetrics.Timing(5.0, 24));
    assertThat(m.e2eLatency()).isEqualTo(new ServerMetrics.Timing(20.0, 24));
  }

  @Test
  void parse_ravelServeOutput_readsTheContractsNames() {
    ServerMetrics m = ServerMetrics.parse(Fixtures.text(Fixtures.RAVEL_SERVE), URL);

    assertThat(m.running()).isEqualTo(1.0);
    assertThat(m.waiting()).isEqualTo(2.0);
    assertThat(m.kvCacheUsage()).isEqualTo(0.5);
    assertThat(m.preemptions()).isEqualTo(5);
    assertThat(m.promptTokens()).isEqualTo(640);
    assertThat(m.generationTokens()).isEqualTo(1280);
    assertThat(m.finished()).containsExactlyInAnyOrderEntriesOf(
        Map.of("stop", 6L, "length", 2L, "abort", 0L, "error", 0L));
    assertThat(m.queueTime()).isEqualTo(new ServerMetrics.Timing(0.75, 8));
    assertThat(m.timeToFirstToken()).isEqualTo(new ServerMetrics.Timing(0.5, 8));
    assertThat(m.e2eLatency()).isEqualTo(new ServerMetrics.Timing(2.0, 8));
  }

  @Test
  void parse_olderVllm_readsGpuCacheUsage() {
    String text = """
        # HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
        # TYPE vllm:gpu_cache_usage_perc gauge
        vllm:gpu_cache_usage_perc{model_name="m"} 0.75
        """;

    assertThat(ServerMetrics.parse(text, URL).kvCacheUsage()).isEqualTo(0.75);
  }

  @Test
  void parse_metricsTheServerDoesNotExpose_readZero() {
    String text = """
        # HELP vllm:num_requests_running Number of requests in model execution batches.
        # TYPE vllm:num_requests_running gauge
        vllm:num_requests_running{model_name="m"} 4.0
        # HELP vllm:request_success_total Count of successfully processed requests.
        # TYPE vllm:request_success_total counter
        """;

    ServerMetrics m = ServerMetrics.parse(text, URL);

    assertThat(m.running()).isEqualTo(4.0);
    assertThat(m.waiting()).isZero();
    assertThat(m.kvCacheUsage()).isZero();
    assertThat(m.preemptions()).isZero();
    assertThat(m.finished()).isEmpty();
    assertThat(m.queueTime()).isEqualTo(ServerMetrics.Timing.NONE);
  }

  @Test
  void parse_emptyBody_isAllZeros() {
    ServerMetrics m = ServerMetrics.parse("", URL);

    assertThat(m.running()).isZero();
    assertThat(m.finishedTotal()).isZero();
  }

  @Test
  void parse_notPrometheusText_throwsNamingTheSource() {
    assertThatThrownBy(() -> ServerMetrics.parse("<!DOCTYPE html>\n<html><body>Bad Gateway</body></html>\n", URL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(URL)
        .hasMessageContaining("not Prometheus text format");
    assertThatThrownBy(() -> ServerMetrics.parse("{\"error\": \"not found\"}", URL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(URL);
    assertThatThrownBy(() -> ServerMetrics.parse("\u00e9\u0001\u0002binary", URL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(URL);
  }

  @Test
  void parse_withoutProtobufOnTheClasspath_works() {
    // the parser library's protobuf model (io.prometheus.client:model on protobuf-java 2.5.0) is excluded
    // from the build: Ray and OTel use protobuf 3 and later
    assertThatThrownBy(() -> Class.forName("io.prometheus.client.Metrics"))
        .isInstanceOf(ClassNotFoundException.class);
    assertThat(protobufJar()).doesNotContain("protobuf-java-2.");

    assertThat(ServerMetrics.parse(Fixtures.text(Fixtures.VLLM), URL).preemptions()).isEqualTo(7);
  }

  /** Where {@code com.google.protobuf.Message} comes from, "" when it is not on the classpath. */
  private static String protobufJar() {
    try {
      return String.valueOf(Class.forName("com.google.protobuf.Message").getProtectionDomain().getCodeSource()
          .getLocation());
    } catch (ClassNotFoundException e) {
      return "";
    }
  }

  @Test
  void minus_earlierSnapshot_givesCounterDeltasAndNewerGauges() {
    ServerMetrics before = ServerMetrics.parse(Fixtures.vllm(3, 0.5, 2, 100, 400, 4, 1, 0.5, 5), URL);
    ServerMetrics after = ServerMetrics.parse(Fixtures.vllm(1, 0.25, 5, 160, 900, 7, 3, 1.25, 10), URL);

    ServerMetrics d = after.minus(before);

    assertThat(d.running()).isEqualTo(1.0);
    assertThat(d.kvCacheUsage()).isEqualTo(0.25);
    assertThat(d.preemptions()).isEqualTo(3);
    assertThat(d.promptTokens()).isEqualTo(60);
    assertThat(d.generationTokens()).isEqualTo(500);
    assertThat(d.finished()).containsExactlyInAnyOrderEntriesOf(Map.of("stop", 3L, "length", 2L));
    assertThat(d.queueTime().sumSeconds()).isCloseTo(0.75, within(1e-12));
    assertThat(d.queueTime().count()).isEqualTo(5);
  }

  @Test
  void minus_counterWentDown_takesTheNewerValueAsTheDelta() {
    ServerMetrics before = ServerMetrics.parse(Fixtures.vllm(3, 0.5, 9, 1000, 4000, 40, 10, 5.0, 50), URL);
    // the server restarted: its counters began again from 0
    ServerMetrics after = ServerMetrics.parse(Fixtures.vllm(2, 0.125, 1, 30, 120, 2, 0, 0.25, 2), URL);

    ServerMetrics d = after.minus(before);

    assertThat(d.preemptions()).isEqualTo(1);
    assertThat(d.promptTokens()).isEqualTo(30);
    assertThat(d.generationTokens()).isEqualTo(120);
    assertThat(d.finished()).containsExactlyInAnyOrderEntriesOf(Map.of("stop", 2L, "length", 0L));
    assertThat(d.queueTime()).isEqualTo(new ServerMetrics.Timing(0.25, 2));
    assertThat(d.running()).isEqualTo(2.0);
  }

  @Test
  void minus_empty_isTheSnapshotItself() {
    ServerMetrics m = ServerMetrics.parse(Fixtures.text(Fixtures.VLLM), URL);

    ServerMetrics d = m.minus(ServerMetrics.empty(URL));

    assertThat(d.toString()).isEqualTo(m.toString());
  }

  @Test
  void toEngineStats_knownBudget_sumsTheServers() {
    ServerMetrics vllm = ServerMetrics.parse(Fixtures.text(Fixtures.VLLM), "a");
    ServerMetrics ravel = ServerMetrics.parse(Fixtures.text(Fixtures.RAVEL_SERVE), "b");

    EngineStats s = ServerMetrics.toEngineStats(List.of(vllm, ravel), 4096);

    assertThat(s.requestsFinished()).containsExactlyInAnyOrderEntriesOf(Map.of(FinishReason.STOP, 22L,
        FinishReason.LENGTH, 9L, FinishReason.ABORT, 1L, FinishReason.ERROR, 0L));
    assertThat(s.preemptions()).isEqualTo(12);
    assertThat(s.running()).isEqualTo(6);
    assertThat(s.waiting()).isEqualTo(3);
    assertThat(s.kvTokenBudget()).isEqualTo(8192);
    assertThat(s.kvTokensUsed()).as("0.3125 and 0.5 of 4096").isEqualTo(1280 + 2048);
    assertThat(s.promptTokens()).isEqualTo(2640);
    assertThat(s.generationTokens()).isEqualTo(5780);
    assertThat(s.spansKept()).isZero();
    assertThat(s.spansSampledOut()).isZero();
  }

  @Test
  void toEngineStats_unknownBudget_keepsTheShare() {
    ServerMetrics ravel = ServerMetrics.parse(Fixtures.text(Fixtures.RAVEL_SERVE), "b");

    EngineStats s = ServerMetrics.toEngineStats(List.of(ravel), 0);

    assertThat(s.kvTokenBudget()).isEqualTo(ServerMetrics.KV_SHARE_SCALE);
    assertThat((double) s.kvTokensUsed() / s.kvTokenBudget()).isEqualTo(0.5);
  }

  @Test
  void toEngineStats_noServers_isZeros() {
    EngineStats s = ServerMetrics.toEngineStats(List.of(), 4096);

    assertThat(s.requestsFinishedTotal()).isZero();
    assertThat(s.kvTokenBudget()).isZero();
  }
}
