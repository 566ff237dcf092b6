package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker's backend start in the run's start-up trace: under the worker's start-up span, the launch of its server
 * and the weight transfer's initialisation are its children; without a start-up span, neither. The server is never
 * given the launch's context ({@code TRACEPARENT}): vLLM seeds Python's {@code random}, which OpenTelemetry's SDK
 * draws span ids from, so two servers in one trace would export the same span ids. Real {@code ravel serve}
 * processes, launched from a template as a {@code vllm serve} is.
 */
class LaunchStartupSpansTest {
  private static final ModelWeights WEIGHTS = ModelWeights.init(ModelSpec.tiny(14), 1);

  @TempDir Path dir;
  private final InMemorySpanExporter spans = InMemorySpanExporter.create();
  private final OpenTelemetrySdk otel = OpenTelemetrySdk.builder().setTracerProvider(
      SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build()).build();

  @AfterEach
  void close() {
    otel.close();
  }

  private OpenAiBackend start() {
    String template = String.join(" ", ProcessHandle.current().info().command().orElseThrow(), "-cp",
        LaunchedServer.workersClasspath(), LaunchedServer.SERVE_MAIN, "--host", "{host}", "--port", "{port}",
        "--model-name", "{model}");
    ServerBackendSpec spec = ServerBackendSpec.builder().launchCommand(template)
        .launchTimeout(Duration.ofSeconds(120)).build();
    return OpenAiBackend.start(spec, "ravel-tiny", WEIGHTS, 4096, 64, otel, dir);
  }

  /** The launched server's {@code TRACEPARENT}, read from its environment by its PID. */
  private static Optional<String> traceparentOf(long pid) throws IOException {
    String environ = Files.readString(Path.of("/proc", Long.toString(pid), "environ"), StandardCharsets.UTF_8);
    return Arrays.stream(environ.split("\u0000")).filter(e -> e.regionMatches(true, 0, "TRACEPARENT=", 0, 12))
        .map(e -> e.substring(12)).findFirst();
  }

  @Test
  void start_underAStartupSpan_launchAndTransferAreItsChildrenAndTheServerGetsNoTraceparent()
      throws IOException {
    Span parent = otel.getTracer("test").spanBuilder(SpanNames.WORKER_START_BACKEND).startSpan();
    OpenAiBackend backend;
    try (Scope s = parent.makeCurrent()) {
      backend = start();
    } finally {
      parent.end();
    }
    try {
      SpanData launch = finished(SpanNames.WORKER_LAUNCH_SERVER);
      SpanData transfer = finished(SpanNames.WORKER_INIT_WEIGHT_TRANSFER);
      assertThat(launch.getParentSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
      assertThat(transfer.getParentSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
      assertThat(launch.getEndEpochNanos()).isLessThanOrEqualTo(transfer.getStartEpochNanos());
      assertThat(traceparentOf(backend.launchedPid())).isEmpty();
    } finally {
      backend.close();
    }
  }

  @Test
  void start_withoutAStartupSpan_opensNoSpanAndGivesNoTraceparent() throws IOException {
    OpenAiBackend backend = start();
    try {
      assertThat(spans.getFinishedSpanItems()).extracting(SpanData::getName)
          .doesNotContain(SpanNames.WORKER_LAUNCH_SERVER, SpanNames.WORKER_INIT_WEIGHT_TRANSFER);
      assertThat(traceparentOf(backend.launchedPid())).isEmpty();
    } finally {
      backend.close();
    }
  }

  private SpanData finished(String name) {
    return spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).findFirst()
        .orElseThrow(() -> new AssertionError("no span " + name + " in " + spans.getFinishedSpanItems()));
  }
}
