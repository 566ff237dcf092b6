package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.spans.StepMetricNames;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class StepLogTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  Path runDir;

  private static StepRecord step(int i, double reward, int dropped) {
    return new StepRecord(i, "async", reward, 0.4, 0.01 * i, -0.02, 0.1, 128, 256.0, 1.5 + i,
        Map.of("generation", 0.5, "training", 0.75), i + 1, 256, dropped, 12, "trace" + i);
  }

  @Test
  void record_appendsOneLinePerStepAsEachEnds() throws Exception {
    StepLog log = new StepLog(runDir, SdkMeterProvider.builder().build().get("test"));

    log.record(step(0, 0.1, 0));
    assertThat(Files.readAllLines(runDir.resolve(StepLog.FILE))).hasSize(1);
    log.record(step(1, 0.3, 4));

    List<String> lines = Files.readAllLines(runDir.resolve(StepLog.FILE));
    assertThat(lines).hasSize(2);
    JsonNode second = JSON.readTree(lines.get(1));
    assertThat(second.get("step").asInt()).isEqualTo(1);
    assertThat(second.get("rewardMean").asDouble()).isEqualTo(0.3);
    assertThat(second.get("rewardStd").asDouble()).isEqualTo(0.4);
    assertThat(second.get("droppedForAge").asInt()).isEqualTo(4);
    assertThat(second.get("phases").get("training").asDouble()).isEqualTo(0.75);
  }

  @Test
  void record_recordsTheStepsMetricsLabelledWithTheMode() {
    InMemoryMetricReader reader = InMemoryMetricReader.create();
    SdkMeterProvider provider = SdkMeterProvider.builder().registerMetricReader(reader).build();
    StepLog log = new StepLog(runDir, provider.get(StepMetricNames.INSTRUMENTATION_SCOPE));

    log.record(step(0, 0.1, 0));
    log.record(step(1, 0.3, 4));

    Collection<MetricData> metrics = reader.collectAllMetrics();
    MetricData reward = only(metrics, StepMetricNames.REWARD_MEAN);
    // one series per instrument and label set, whatever the number of steps: the latest step's value
    assertThat(reward.getDoubleGaugeData().getPoints()).singleElement().satisfies(p -> {
      assertThat(p.getAttributes().get(AttributeKey.longKey("rl.step"))).isNull();
      assertThat(p.getAttributes().get(AttributeKey.stringKey("rl.mode"))).isEqualTo("async");
      assertThat(p.getValue()).isEqualTo(0.3);
    });
    assertThat(only(metrics, StepMetricNames.PHASE_DURATION).getHistogramData().getPoints()).hasSize(2)
        .allSatisfy(p -> assertThat(p.getCount()).isEqualTo(2))
        .anySatisfy(p -> assertThat(p.getAttributes().get(StepMetricNames.PHASE)).isEqualTo("generation"));
    long dropped = only(metrics, StepMetricNames.TRAJECTORIES).getLongSumData().getPoints().stream()
        .filter(p -> "dropped".equals(p.getAttributes().get(StepMetricNames.TRAJECTORY_STATE)))
        .mapToLong(p -> p.getValue()).sum();
    long used = only(metrics, StepMetricNames.TRAJECTORIES).getLongSumData().getPoints().stream()
        .filter(p -> "used".equals(p.getAttributes().get(StepMetricNames.TRAJECTORY_STATE)))
        .mapToLong(p -> p.getValue()).sum();
    assertThat(dropped).isEqualTo(4);
    assertThat(used).isEqualTo(512);
    assertThat(only(metrics, StepMetricNames.DURATION).getHistogramData().getPoints()).singleElement()
        .satisfies(p -> assertThat(p.getSum()).isEqualTo(1.5 + 2.5));
  }

  @Test
  void record_unwritableRunFolder_neverFailsTheStep() throws Exception {
    Path file = runDir.resolve("not-a-folder");
    Files.writeString(file, "x");
    StepLog log = new StepLog(file, SdkMeterProvider.builder().build().get("test"));

    assertThatCode(() -> log.record(step(0, 0.1, 0))).doesNotThrowAnyException();
  }

  private static MetricData only(Collection<MetricData> metrics, String name) {
    List<MetricData> found = metrics.stream().filter(m -> m.getName().equals(name)).toList();
    assertThat(found).as("metric %s", name).hasSize(1);
    return found.get(0);
  }
}
