package dev.ravel.examples.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The example run on a real Ray head, its trace read back from the run's span files. */
final class PipelineAppTest {
  static PipelineApp.Result result;
  static RunTraces traces;

  @BeforeAll
  static void run() throws IOException {
    Path runs = Path.of(System.getProperty("app.runs"));
    Path python = Path.of(System.getProperty("app.python"));
    String runId = "java-app-" + ProcessHandle.current().pid();
    result = PipelineApp.run(runs, runId, python);
    traces = RunTraces.readDir(result.runDir());
  }

  @Test
  void run_wordsGoThroughPythonAndBackThroughJava() {
    assertThat(result.answer().items()).containsExactly("HELLO!", "RAY!");
    assertThat(result.answer().hops()).containsExactly("shouter", "front");
  }

  @Test
  void run_javaExceptionCrossesPythonBackToTheDriverWithTypeAndMessage() {
    assertThat(result.failure()).contains("JavaWorkerError").contains("java.lang.IllegalArgumentException")
        .contains("echo refuses BOOM");
  }

  @Test
  void run_oneTraceNestsEveryHopAcrossThreeProcessesAndTwoLanguages() {
    assertThat(traces.problems()).isEmpty();
    List<SpanRecord> trace = traces.byTrace().get(result.traceId());
    assertThat(trace).isNotNull();
    Map<String, SpanRecord> byId = traces.byId();
    SpanRecord root = only(trace, "app.pipeline");
    assertThat(root.isRoot()).isTrue();
    List<SpanRecord> relays = named(trace, "rl.front.relay");
    List<SpanRecord> shouts = named(trace, "rl.shouter.shout");
    List<SpanRecord> echoes = named(trace, "rl.echo.echo");
    assertThat(relays).hasSize(2).allSatisfy(s -> assertThat(s.parentSpanId()).isEqualTo(root.spanId()));
    assertThat(shouts).hasSize(2).allSatisfy(s -> assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.front.relay"));
    // hello, ray, then boom
    assertThat(echoes).hasSize(3).allSatisfy(s -> assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.shouter.shout"));
    assertThat(named(trace, "app.front.stamp")).hasSize(1)
        .allSatisfy(s -> assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.front.relay"));
    assertThat(echoes).filteredOn(SpanRecord::isError).hasSize(1);
    assertThat(shouts).filteredOn(SpanRecord::isError).hasSize(1);
    // the driver, the Java front, the Python shouter, the Java echo
    assertThat(trace.stream().map(SpanRecord::process).distinct()).hasSize(4);
    assertThat(List.of(relays.get(0), shouts.get(0), echoes.get(0)).stream()
        .map(s -> s.resourceAttribute(io.opentelemetry.api.common.AttributeKey.stringKey("telemetry.sdk.language"))))
        .containsExactly("java", "python", "java");
  }

  @Test
  void run_variableExportedWhereTheHeadStartedIsMaskedInTheActors() {
    assertThat(result.headValue()).as("exported where the head started").startsWith("http://127.0.0.1:9/");
    assertThat(result.shouterEnv().getOrDefault(PipelineApp.LEAKED, "")).isEmpty();
  }

  private static List<SpanRecord> named(List<SpanRecord> spans, String name) {
    return spans.stream().filter(s -> s.name().equals(name)).toList();
  }

  private static SpanRecord only(List<SpanRecord> spans, String name) {
    List<SpanRecord> found = named(spans, name);
    assertThat(found).as("spans named %s", name).hasSize(1);
    return found.get(0);
  }
}
