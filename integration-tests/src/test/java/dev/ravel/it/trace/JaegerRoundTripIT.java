package dev.ravel.it.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.it.support.JaegerServer;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.telemetry.traces.JaegerSource;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceSourceException;
import dev.ravel.telemetry.view.RunView;
import dev.ravel.telemetry.view.StepView;
import dev.ravel.telemetry.view.TerminalWaterfall;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two real runs exported to a real Jaeger v2, one over OTLP gRPC and one over OTLP http/protobuf, read back
 * by run id: Jaeger holds exactly the spans the JSONL files hold, run by run.
 *
 * <p>The class's time is its set-up: Jaeger starts in well under a second, and each run costs a driver's start and
 * its connection to Ray, then the start-up of its actors' worker JVMs (and of the two that Ray starts for the run
 * folder's check on a head the driver did not start), its two steps taking about a second. The runs send no OTLP
 * metrics ({@code OTEL_METRICS_EXPORTER=none}): Jaeger takes traces only, and with the traces-only variables of
 * the http/protobuf run the metrics would go to the default endpoint (127.0.0.1:4317), where nothing of this class
 * listens, each process then retrying until its shutdown timeout (5 s) at the end of the run.
 */
final class JaegerRoundTripIT {
  /** How long Jaeger may take to hold every span of a run that ended (it takes seconds). */
  static final Duration INGESTION = Duration.ofSeconds(120);
  @TempDir
  static Path dir;
  static JaegerServer jaeger;
  static Instant start;
  static RavelCommand.Result grpcRun;
  static RavelCommand.Result httpRun;

  @BeforeAll
  static void exportTwoRuns() throws Exception {
    jaeger = JaegerServer.start(dir);
    start = Instant.now().minusSeconds(60);
    Map<String, String> grpc = new HashMap<>(SharedRayHead.env());
    grpc.put("OTEL_EXPORTER_OTLP_ENDPOINT", jaeger.otlpGrpcEndpoint());
    grpc.put("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
    grpc.put("OTEL_METRICS_EXPORTER", "none");
    grpcRun = RavelCommand.run(grpc, 300, args("it-jaeger-grpc"));
    Map<String, String> http = new HashMap<>(SharedRayHead.env());
    http.put("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", jaeger.otlpHttpEndpoint() + "/v1/traces");
    http.put("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf");
    http.put("OTEL_METRICS_EXPORTER", "none");
    httpRun = RavelCommand.run(http, 300, args("it-jaeger-http"));
  }

  @AfterAll
  static void stop() {
    if (jaeger != null) {
      jaeger.close();
    }
  }

  static String[] args(String runId) {
    return new String[] {"run", Path.of(System.getProperty("ravel.home"), "examples/grpo-sync.yaml").toString(),
        "grpo.steps=2", "grpo.prompts_per_step=4", "grpo.group_size=4", "cluster.worker_heap_mb=256",
        "telemetry.exporter=both", "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=1.0",
        "telemetry.run_id=" + runId, "telemetry.runs_dir=" + dir.resolve("runs")};
  }

  @Test
  void grpc_jaegerHoldsExactlyTheSpansOfTheRunsFiles() throws Exception {
    assertThat(grpcRun.exitCode()).as(grpcRun.stderr()).isZero();
    assertSameSpans("it-jaeger-grpc");
  }

  @Test
  void httpProtobuf_jaegerHoldsExactlyTheSpansOfTheRunsFiles() throws Exception {
    assertThat(httpRun.exitCode()).as(httpRun.stderr()).isZero();
    assertSameSpans("it-jaeger-http");
  }

  @Test
  void unreachableJaeger_failsWithOneLineNamingTheUrl() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
      port = s.getLocalPort();
    }
    URI nowhere = URI.create("http://127.0.0.1:" + port);
    assertThatThrownBy(() -> JaegerSource.of(nowhere, Duration.ofSeconds(2))
        .runSpans("x", List.of("ravel"), Instant.now().minusSeconds(60), Instant.now()))
        .isInstanceOf(TraceSourceException.class)
        .hasMessageContaining("not reachable at " + nowhere)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
  }

  static void assertSameSpans(String runId) throws InterruptedException {
    List<SpanRecord> files = RunTraces.readDir(dir.resolve("runs").resolve(runId)).spans();
    assertThat(files).hasSizeGreaterThan(20);
    JaegerSource source = JaegerSource.of(jaeger.queryUrl(), Duration.ofSeconds(30));
    // Jaeger stores what it received asynchronously: polled until it holds as many spans as the files (then
    // compared exactly below), up to INGESTION; a query that fails meanwhile (a loaded Jaeger timing out) is
    // asked again, and only a failure that lasts past the bound fails the test
    List<SpanRecord> fromJaeger = null;
    TraceSourceException lastFailure = null;
    long deadline = System.nanoTime() + INGESTION.toNanos();
    while (System.nanoTime() < deadline) {
      try {
        fromJaeger = source.runSpans(runId, List.of("ravel"), start, Instant.now().plusSeconds(60));
        lastFailure = null;
        if (fromJaeger.size() >= files.size()) {
          break;
        }
      } catch (TraceSourceException e) {
        lastFailure = e;
      }
      Thread.sleep(500);
    }
    if (lastFailure != null) {
      throw lastFailure;
    }
    if (fromJaeger == null) {
      throw new AssertionError("Jaeger was not queried within " + INGESTION);
    }
    Set<String> onlyJaeger = new java.util.TreeSet<>(key(fromJaeger));
    onlyJaeger.removeAll(key(files));
    Set<String> onlyFiles = new java.util.TreeSet<>(key(files));
    onlyFiles.removeAll(key(fromJaeger));
    assertThat(onlyJaeger).as("only in Jaeger (only in files: %s)", onlyFiles.stream().limit(5).toList()).isEmpty();
    assertThat(onlyFiles).as("only in the files").isEmpty();
    // the same waterfalls, drawn from either source
    RunView a = RunView.of(files);
    RunView b = RunView.of(fromJaeger);
    TerminalWaterfall draw = new TerminalWaterfall();
    assertThat(b.steps()).hasSize(2);
    assertThat(draw.renderRun(b, 120, false)).isEqualTo(draw.renderRun(a, 120, false));
    for (StepView step : a.steps()) {
      assertThat(draw.render(b.step(step.step()).orElseThrow(), 120, false)).isEqualTo(draw.render(step, 120, false));
    }
    assertThat(fromJaeger).allSatisfy(s -> assertThat(s.runId()).isEqualTo(runId));
  }

  static Set<String> key(List<SpanRecord> spans) {
    return spans.stream().map(s -> String.join("|", s.traceId(), s.spanId(), s.parentSpanId(), s.name(),
        Long.toString(s.startNanos()), Long.toString(s.endNanos()), s.process(), s.runId(), Integer.toString(s.statusCode()),
        new java.util.TreeMap<>(s.attributes()).toString(), Integer.toString(s.links().size())))
        .collect(Collectors.toSet());
  }
}
