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

  /** A batch of {@code groups} groups of {@code size}, each completion scored with components. */
  private static List<dev.ravel.workers.grpo.Trajectory> batch(int groups, int size) {
    List<dev.ravel.workers.grpo.Trajectory> out = new java.util.ArrayList<>();
    for (int g = 0; g < groups; g++) {
      for (int i = 0; i < size; i++) {
        out.add(new dev.ravel.workers.grpo.Trajectory("r" + g, new int[] {1}, new int[] {2, 3}, new float[] {-1, -1},
            g + i / 10.0, 3, i).withScoring(new dev.ravel.workers.grpo.Scoring("p" + g, "c" + g + "." + i, "a" + g,
                Map.of("exact", (double) i), false)));
      }
    }
    return out;
  }

  @Test
  void samples_spreadOverTheGroupsTheSameForTheSameBatch() {
    List<dev.ravel.telemetry.runs.SampleRecord> s = StepLog.samples(5, batch(8, 4), 4);

    assertThat(s).extracting(dev.ravel.telemetry.runs.SampleRecord::group).containsExactly(0, 2, 4, 6);
    assertThat(s).extracting(dev.ravel.telemetry.runs.SampleRecord::index).containsExactly(0, 1, 2, 3);
    assertThat(s.get(1)).isEqualTo(new dev.ravel.telemetry.runs.SampleRecord(5, 2, 1, "p2", "c2.1", "a2", 2.1,
        Map.of("exact", 1.0), 2, 3));
    assertThat(StepLog.samples(5, batch(8, 4), 4)).isEqualTo(s);
  }

  @Test
  void samples_moreThanGroupsTakeFurtherCompletionsOfEachAndNeverMoreThanTheBatch() {
    List<dev.ravel.telemetry.runs.SampleRecord> s = StepLog.samples(1, batch(2, 3), 5);

    assertThat(s).extracting(x -> x.group() + "/" + x.index()).containsExactly("0/0", "1/0", "0/1", "1/1", "0/2");
    assertThat(StepLog.samples(1, batch(2, 3), 50)).hasSize(6).doesNotHaveDuplicates();
    assertThat(StepLog.samples(1, batch(2, 3), 0)).isEmpty();
  }

  @Test
  void record_appendsTheStepsSamplesBesideItsLine() throws Exception {
    StepLog log = new StepLog(runDir, SdkMeterProvider.builder().build().get("test"), 2);

    log.record(step(1, 0.1, 0), batch(4, 2));
    log.record(step(2, 0.1, 0), batch(4, 2));

    List<dev.ravel.telemetry.runs.SampleRecord> s = Files.readAllLines(runDir.resolve("samples.jsonl")).stream()
        .map(dev.ravel.telemetry.runs.SampleRecord::parse).toList();
    assertThat(s).extracting(dev.ravel.telemetry.runs.SampleRecord::step).containsExactly(1, 1, 2, 2);
    assertThat(s.get(3).completion()).isEqualTo("c2.1");
  }

  @Test
  void rewards_averageEachComponentAndCountTheFailed() {
    List<dev.ravel.workers.grpo.Trajectory> b = new java.util.ArrayList<>(batch(1, 4)); // exact 0, 1, 2, 3
    b.add(b.get(0).withScoring(new dev.ravel.workers.grpo.Scoring("p", "c", "a", Map.of(), true)));
    b.add(b.get(0).withScoring(null));

    StepRecord.Rewards r = Steps.rewards(b);

    assertThat(r.components()).containsExactly(Map.entry("exact", 1.5));
    assertThat(r.failed()).isEqualTo(1);
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
