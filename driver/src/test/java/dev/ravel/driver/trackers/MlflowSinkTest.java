package dev.ravel.driver.trackers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.config.ConfigException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class MlflowSinkTest {
  @Test
  void trackingUri_unset_isAnErrorNamingTheVariable() {
    ConfigException e = catchThrowableOfType(ConfigException.class, () -> MlflowSink.trackingUri(Map.of()));

    assertThat(e.key()).isEqualTo("MLFLOW_TRACKING_URI");
    assertThat(e.getMessage()).startsWith("MLFLOW_TRACKING_URI: not set").contains("telemetry.trackers");
  }

  @Test
  void trackingUri_notAnHttpUrl_isAnErrorNamingTheVariableAndTheValue() {
    ConfigException e = catchThrowableOfType(ConfigException.class,
        () -> MlflowSink.trackingUri(Map.of("MLFLOW_TRACKING_URI", "file:///tmp/mlruns")));

    assertThat(e.key()).isEqualTo("MLFLOW_TRACKING_URI");
    assertThat(e.getMessage()).contains("'file:///tmp/mlruns'").contains("http://");
  }

  @Test
  void trackingUri_withCredentials_isRefusedWithoutShowingThem() {
    ConfigException e = catchThrowableOfType(ConfigException.class,
        () -> MlflowSink.trackingUri(Map.of("MLFLOW_TRACKING_URI", "https://me:s3cr3t@mlflow.example")));

    assertThat(e.getMessage()).contains("https://****@mlflow.example").doesNotContain("s3cr3t")
        .contains("MLFLOW_TRACKING_PASSWORD");
  }

  @Test
  void trackingUri_trailingSlash_isDropped() {
    assertThat(MlflowSink.trackingUri(Map.of("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000/")))
        .hasToString("http://127.0.0.1:5000");
  }

  @Test
  void authorization_tokenWinsOverUserAndPassword() {
    assertThat(MlflowSink.authorization(Map.of("MLFLOW_TRACKING_TOKEN", "t0k", "MLFLOW_TRACKING_USERNAME", "me",
        "MLFLOW_TRACKING_PASSWORD", "pw"))).isEqualTo("Bearer t0k");
    assertThat(MlflowSink.authorization(Map.of("MLFLOW_TRACKING_USERNAME", "me", "MLFLOW_TRACKING_PASSWORD", "pw")))
        .isEqualTo("Basic " + Base64.getEncoder().encodeToString("me:pw".getBytes(StandardCharsets.UTF_8)));
    assertThat(MlflowSink.authorization(Map.of())).isNull();
  }

  @Test
  void authorization_userWithoutPassword_isAnErrorNamingThePasswordVariable() {
    ConfigException e = catchThrowableOfType(ConfigException.class,
        () -> MlflowSink.authorization(Map.of("MLFLOW_TRACKING_USERNAME", "me")));

    assertThat(e.key()).isEqualTo("MLFLOW_TRACKING_PASSWORD");
  }

  @Test
  void params_flattenedConfig_asTextListsAsJsonLongValuesCut() {
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("grpo.steps", 3);
    config.put("grpo.learning_rate", 1e-3);
    config.put("data.train", List.of("a.jsonl", "b.jsonl"));
    config.put("model.path", "");
    config.put("long", "x".repeat(7000));

    Map<String, String> p = MlflowSink.params(config);

    assertThat(p).containsEntry("grpo.steps", "3").containsEntry("grpo.learning_rate", "0.001")
        .containsEntry("data.train", "[\"a.jsonl\",\"b.jsonl\"]").containsEntry("model.path", "");
    assertThat(p.get("long")).hasSize(MlflowSink.MAX_PARAM_VALUE).endsWith("...");
  }

  @Test
  void paramBatches_atMostAHundredParamsEach() {
    Map<String, String> params = new LinkedHashMap<>();
    for (int i = 0; i < 250; i++) {
      params.put("k" + i, "v" + i);
    }

    List<ObjectNode> batches = MlflowSink.paramBatches("r1", params);

    assertThat(batches).extracting(b -> b.get("params").size()).containsExactly(100, 100, 50);
    assertThat(batches).allSatisfy(b -> assertThat(b.get("run_id").asText()).isEqualTo("r1"));
    assertThat(batches.get(2).get("params").get(49).get("key").asText()).isEqualTo("k249");
    assertThat(MlflowSink.paramBatches("r1", Map.of())).isEmpty();
  }

  @Test
  void metricBatches_eachNumberAtItsStep_atMostAThousandEach() {
    List<dev.ravel.telemetry.runs.StepRecord> steps = new java.util.ArrayList<>();
    for (int i = 1; i <= 30; i++) {
      steps.add(Steps.full(i));
    }
    int perStep = TrackerMetrics.of(Steps.full(1)).size();

    List<ObjectNode> batches = MlflowSink.metricBatches("r1", steps, 1234L);

    int total = batches.stream().mapToInt(b -> b.get("metrics").size()).sum();
    assertThat(total).isEqualTo(30 * perStep);
    assertThat(batches).allSatisfy(b -> assertThat(b.get("metrics").size()).isLessThanOrEqualTo(1000));
    JsonNode first = batches.get(0).get("metrics").get(0);
    assertThat(first.get("key").asText()).isEqualTo("rl.step.reward.mean");
    assertThat(first.get("value").asDouble()).isEqualTo(0.125);
    assertThat(first.get("step").asInt()).isEqualTo(1);
    assertThat(first.get("timestamp").asLong()).isEqualTo(1234L);
  }

  @Test
  void metricBatches_nonFiniteNumbers_asMlflowSpellsThem() {
    dev.ravel.telemetry.runs.StepRecord nan = new dev.ravel.telemetry.runs.StepRecord(1, "sync", Double.NaN,
        Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0, 0, 0, 0, 0, Map.of(), 1, 0, 0, 0, "t");

    JsonNode metrics = MlflowSink.metricBatches("r1", List.of(nan), 1L).get(0).get("metrics");

    assertThat(metrics.get(0).get("value").asText()).isEqualTo("NaN");
    assertThat(metrics.get(1).get("value").asText()).isEqualTo("Infinity");
    assertThat(metrics.get(2).get("value").asText()).isEqualTo("-Infinity");
  }

  @Test
  void mlflowStatus_ofEachRunStatus() {
    assertThat(MlflowSink.mlflowStatus("succeeded")).isEqualTo("FINISHED");
    assertThat(MlflowSink.mlflowStatus("failed")).isEqualTo("FAILED");
    assertThat(MlflowSink.mlflowStatus("interrupted")).isEqualTo("KILLED");
  }
}
