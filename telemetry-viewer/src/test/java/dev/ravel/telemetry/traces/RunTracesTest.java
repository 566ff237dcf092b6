package dev.ravel.telemetry.traces;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class RunTracesTest {
  /** One line as an OpenTelemetry Collector's file exporter writes it (OTLP JSON, extra fields included). */
  static final String COLLECTOR_LINE = "{\"resourceSpans\":[{\"resource\":{\"attributes\":["
      + "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"ravel\"}},"
      + "{\"key\":\"rl.run.id\",\"value\":{\"stringValue\":\"r1\"}},"
      + "{\"key\":\"process.pid\",\"value\":{\"intValue\":\"4242\"}}],\"droppedAttributesCount\":0},"
      + "\"scopeSpans\":[{\"scope\":{\"name\":\"dev.ravel\",\"version\":\"1\"},\"spans\":["
      + "{\"traceId\":\"5B8EFFF798038103D269B633813FC60C\",\"spanId\":\"EEE19B7EC3C1B174\",\"parentSpanId\":\"\","
      + "\"traceState\":\"\",\"flags\":257,\"name\":\"rl.grpo.step\",\"kind\":1,"
      + "\"startTimeUnixNano\":\"1544712660000000000\",\"endTimeUnixNano\":\"1544712661000000000\","
      + "\"attributes\":[{\"key\":\"rl.step\",\"value\":{\"intValue\":\"3\"}},"
      + "{\"key\":\"ratio\",\"value\":{\"doubleValue\":0.5}},{\"key\":\"ok\",\"value\":{\"boolValue\":true}},"
      + "{\"key\":\"tags\",\"value\":{\"arrayValue\":{\"values\":[{\"stringValue\":\"a\"},{\"stringValue\":\"b\"}]}}}],"
      + "\"droppedAttributesCount\":0,"
      + "\"events\":[{\"timeUnixNano\":\"1544712660500000000\",\"name\":\"exception\",\"attributes\":[]}],"
      + "\"links\":[{\"traceId\":\"0af7651916cd43dd8448eb211c80319c\",\"spanId\":\"b7ad6b7169203331\","
      + "\"traceState\":\"k=v\",\"attributes\":[]}],"
      + "\"status\":{\"code\":2,\"message\":\"boom\"}}]}],\"schemaUrl\":\"https://opentelemetry.io/schemas/1.4.0\"}]}";

  @TempDir
  Path dir;

  @Test
  void readDir_acceptsACollectorFileExporterLine() throws Exception {
    Files.writeString(dir.resolve("collector-output.jsonl"), COLLECTOR_LINE + "\n");

    RunTraces t = RunTraces.readDir(dir);

    assertThat(t.problems()).isEmpty();
    SpanRecord s = t.spans().get(0);
    assertThat(s.traceId()).isEqualTo("5b8efff798038103d269b633813fc60c");
    assertThat(s.spanId()).isEqualTo("eee19b7ec3c1b174");
    assertThat(s.isRoot()).isTrue();
    assertThat(s.startNanos()).isEqualTo(1544712660000000000L);
    assertThat(s.durationNanos()).isEqualTo(1_000_000_000L);
    assertThat(s.attributes()).containsEntry("rl.step", 3L).containsEntry("ratio", 0.5).containsEntry("ok", true)
        .containsEntry("tags", List.of("a", "b"));
    assertThat(s.resource()).containsEntry("process.pid", 4242L);
    assertThat(s.runId()).isEqualTo("r1");
    assertThat(s.isError()).isTrue();
    assertThat(s.statusMessage()).isEqualTo("boom");
    assertThat(s.events()).extracting(SpanRecord.Event::name).containsExactly("exception");
    assertThat(s.links()).extracting(SpanRecord.Link::spanId).containsExactly("b7ad6b7169203331");
  }

  @Test
  void readDir_reportsACorruptLineWithFileAndLineAndKeepsTheRest() throws Exception {
    Files.writeString(dir.resolve("traces-driver-1.jsonl"), COLLECTOR_LINE + "\n{\"resourceSpans\":[{\"reso\n"
        + COLLECTOR_LINE.replace("EEE19B7EC3C1B174", "EEE19B7EC3C1B175") + "\n");

    RunTraces t = RunTraces.readDir(dir);

    assertThat(t.spans()).hasSize(2);
    assertThat(t.problems()).singleElement().asString().contains("traces-driver-1.jsonl:2: unreadable line");
  }

  @Test
  void readDir_skipsTheStepLog() throws Exception {
    Files.writeString(dir.resolve("traces-driver-1.jsonl"), COLLECTOR_LINE + "\n");
    Files.writeString(dir.resolve(RunTraces.STEP_LOG_FILE), "{\"step\":0,\"rewardMean\":0.1}\n");

    RunTraces t = RunTraces.readDir(dir);

    assertThat(t.problems()).isEmpty();
    assertThat(t.spans()).hasSize(1);
  }

  @Test
  void readDir_skipsMetricLinesAndNonJsonlFiles() throws Exception {
    Files.writeString(dir.resolve("metrics-driver-1.jsonl"), "{\"resourceMetrics\":[]}\n");
    Files.writeString(dir.resolve("run.json"), "{\"not\":\"spans\"}");

    RunTraces t = RunTraces.readDir(dir);

    assertThat(t.spans()).isEmpty();
    assertThat(t.problems()).isEmpty();
  }

  @Test
  void readDir_metricsFileStillBeingWritten_isNoProblem() throws Exception {
    // a process exporting its last metrics while the run is read: a torn last line, in a file without spans
    Files.writeString(dir.resolve("metrics-reward_environment-7.jsonl"), "{\"resourceMetrics\":[]}\n{\"resourceMet");

    RunTraces t = RunTraces.readDir(dir);

    assertThat(t.problems()).isEmpty();
  }

  @Test
  void readDir_malformedIdsAreAProblemNotASpan() throws Exception {
    Files.writeString(dir.resolve("x.jsonl"), COLLECTOR_LINE.replace("EEE19B7EC3C1B174", "not-hex-at-all!!") + "\n");

    RunTraces t = RunTraces.readDir(dir);

    assertThat(t.spans()).isEmpty();
    assertThat(t.problems()).singleElement().asString().contains("x.jsonl:1");
  }

  @Test
  void readDir_missingFolderFailsNamingIt() {
    assertThatThrownBy(() -> RunTraces.readDir(dir.resolve("nope")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("nope");
  }
}
