package dev.ravel.telemetry.runs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class RunRecordTest {
  private static final Instant STARTED = Instant.parse("2026-11-29T08:00:00Z");
  private static final Instant FINISHED = Instant.parse("2026-11-29T08:05:30Z");

  @TempDir
  Path tmp;

  @Test
  void write_producesJsonWithRunFieldsStepMetricsConfigAndDetails() throws IOException {
    Path runDir = tmp.resolve("runs").resolve("r-1");
    RunRecord record = new RunRecord("r-1", "sync", RunRecord.Status.SUCCEEDED, STARTED, FINISHED, 2,
        Map.of("grpo.steps", 2, "run.mode", "sync"), List.of(step(0, 0.25, 1.5), step(1, 0.5, 1.25)),
        Map.of("collector", Map.of("groups", 3)));

    Path file = record.write(runDir);

    assertThat(file).isEqualTo(runDir.resolve(RunRecord.FILE)).isRegularFile();
    JsonNode root = new ObjectMapper().readTree(file.toFile());
    assertThat(root.path("run_id").asText()).isEqualTo("r-1");
    assertThat(root.path("mode").asText()).isEqualTo("sync");
    assertThat(root.path("status").asText()).isEqualTo("succeeded");
    assertThat(root.path("started").asText()).isEqualTo("2026-11-29T08:00:00Z");
    assertThat(root.path("finished").asText()).isEqualTo("2026-11-29T08:05:30Z");
    assertThat(root.path("steps").asInt()).isEqualTo(2);
    assertThat(root.path("collector").path("groups").asInt()).isEqualTo(3);
    JsonNode second = root.path("step_metrics").get(1);
    assertThat(second.path("step").asInt()).isEqualTo(1);
    assertThat(second.path("stepSeconds").asDouble()).isEqualTo(1.25);
    assertThat(second.path("rayCalls").asLong()).isEqualTo(40);
    assertThat(second.path("traceId").asText()).isEqualTo("trace-1");
    assertThat(second.path("phases").path("training").asDouble()).isEqualTo(0.25);
    assertThat(root.path("config").path("grpo.steps").isInt()).as("a number, not a string").isTrue();
  }

  @Test
  void read_givesBackWhatWriteWrote() {
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("grpo.steps", 2);
    config.put("grpo.temperature", 0.7);
    RunRecord record = new RunRecord("r-1", "async", RunRecord.Status.INTERRUPTED, STARTED, FINISHED, 1, config,
        List.of(step(0, 0.25, 1.5)), Map.of(RunRecord.VERSIONS, Map.of("ravel", "0.1.0", "ray", "2.60.0")));
    record.write(tmp);

    RunRecord back = RunRecord.read(tmp).orElseThrow();

    assertThat(back).isEqualTo(record);
    assertThat(back.versions()).containsEntry("ray", "2.60.0");
    assertThat(back.stepMetrics().get(0).phases().keySet()).containsExactly("generation", "training");
  }

  @Test
  void read_noRecordIsEmpty() {
    assertThat(RunRecord.read(tmp)).isEmpty();
  }

  @Test
  void read_damagedRecordNamesTheFileAndTheField() throws IOException {
    Files.writeString(tmp.resolve(RunRecord.FILE), "{\"run_id\":\"r\",\"mode\":\"sync\",\"status\":\"done\"}");
    assertThatThrownBy(() -> RunRecord.read(tmp)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(tmp.resolve(RunRecord.FILE).toString()).hasMessageContaining("unknown status 'done'");

    Files.writeString(tmp.resolve(RunRecord.FILE), "{\"run_id\":\"r\",\"mode\":\"sync\",\"status\":\"failed\","
        + "\"started\":\"yesterday\",\"finished\":\"2026-11-29T08:05:30Z\"}");
    assertThatThrownBy(() -> RunRecord.read(tmp)).hasMessageContaining("started 'yesterday'");

    Files.writeString(tmp.resolve(RunRecord.FILE), "{\"run_id\":");
    assertThatThrownBy(() -> RunRecord.read(tmp)).hasMessageContaining("not JSON");
  }

  @Test
  void write_failedRunWithoutStepsStillWritesTheRecord() {
    new RunRecord("r-2", "async", RunRecord.Status.FAILED, STARTED, FINISHED, 0, Map.of(), List.of(), Map.of())
        .write(tmp);

    RunRecord back = RunRecord.read(tmp).orElseThrow();
    assertThat(back.status()).isEqualTo(RunRecord.Status.FAILED);
    assertThat(back.steps()).isZero();
    assertThat(back.stepMetrics()).isEmpty();
  }

  @Test
  void write_unwritableRunDirNamesTheFile() throws IOException {
    Path notADir = Files.writeString(tmp.resolve("occupied"), "x");
    RunRecord r = new RunRecord("r", "sync", RunRecord.Status.SUCCEEDED, STARTED, FINISHED, 0, Map.of(), List.of(),
        Map.of());

    assertThatThrownBy(() -> r.write(notADir)).isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining(notADir.resolve(RunRecord.FILE).toString());
  }

  @Test
  void new_detailsMayNotShadowTheRecordsFields() {
    assertThatThrownBy(() -> new RunRecord("r", "sync", RunRecord.Status.SUCCEEDED, STARTED, FINISHED, 0, Map.of(),
        List.of(), Map.of("status", "ok"))).hasMessageContaining("'status'");
  }

  @Test
  void parse_stepLineRoundTripsAndATornLineIsRejected() {
    StepRecord s = step(3, 0.5, 2.0);

    assertThat(StepRecord.parse(s.toJsonLine())).isEqualTo(s);
    assertThatThrownBy(() -> StepRecord.parse("{\"step\":4,\"mode\":\"sy")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("not a step line");
  }

  @Test
  void lagOf_behaviourVersions_countsEachAgeBehindTheTrainedPolicyAndRoundTrips() {
    StepRecord.Lag lag = StepRecord.Lag.of(5, List.of(5L, 4L, 4L, 3L, 5L, 5L), 7, 2);

    assertThat(lag.ages()).containsExactly(Map.entry(0, 3), Map.entry(1, 2), Map.entry(2, 1));
    assertThat(lag.ages().values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(6);
    assertThat(lag.meanAge()).isEqualTo(4.0 / 6);
    assertThat(lag.maxAge()).isEqualTo(2);
    StepRecord s = step(3, 0.5, 2.0);
    StepRecord withLag = new StepRecord(s.step(), s.mode(), s.rewardMean(), s.rewardStd(), s.kl(), s.loss(),
        s.clipFraction(), s.tokens(), s.tokensPerSecond(), s.stepSeconds(), s.phases(), s.weightVersion(),
        s.trajectories(), s.droppedForAge(), s.rayCalls(), s.traceId(), s.completions(), s.eval(), s.update(),
        s.rewards(), lag);
    assertThat(StepRecord.parse(withLag.toJsonLine())).isEqualTo(withLag);
    assertThat(StepRecord.parse(withLag.toJsonLine()).lag().ages()).containsEntry(1, 2);
  }

  static StepRecord step(int i, double reward, double seconds) {
    Map<String, Double> phases = new LinkedHashMap<>();
    phases.put("generation", 1.0);
    phases.put("training", 0.25);
    return new StepRecord(i, "sync", reward, 0.3, 0.01, -0.02, 0.1, 128, 256.0, seconds, phases, i, 64, 0, 40,
        "trace-" + i);
  }
}
