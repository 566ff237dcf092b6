package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.generation.GenerationWorker;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Engine tracing opted in, the run configured to export over OTLP http/protobuf to one endpoint while the
 * raylet's shell exported another: the Python generation worker's {@code llm_request} spans (vLLM's names) go
 * to the configured endpoint, as children of its {@code rl.worker.generate} span, and the inherited one receives
 * nothing. The worker's process is given the configured endpoint in the traces variables, for an engine (vLLM)
 * that reads them.
 */
final class PythonEngineTracingEndpointIT {
  static final int REQUESTS = 6;

  @TempDir
  static Path runs;

  static OtlpHttpSink configured;
  static OtlpHttpSink inherited;
  static DriverSession session;
  static String traceId;
  static Map<String, String> workerEnv;

  @BeforeAll
  static void run() throws Exception {
    configured = new OtlpHttpSink();
    inherited = new OtlpHttpSink();
    Map<String, String> env = new HashMap<>(TestEnv.clean());
    env.put("OTEL_EXPORTER_OTLP_ENDPOINT", configured.baseUrl());
    env.put("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
    TelemetryConfig config = TelemetryConfig.builder().runId("it-python-engine").runsDir(runs).engineTracing(true)
        .engineSampleRatio(1.0).exporter(ExporterKind.BOTH).build();
    session = DriverSession.builder(config).env(env)
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces")
        .headEnv("OTEL_TRACES_SAMPLER", "always_off")
        .start();
    RavelActorHandle<GenerationWorker> worker = PythonWorkerProcess.start(session);
    try (ScopedSpan s = session.spans().start(SpanGroup.STEP, "it.caller")) {
      traceId = s.spanContext().getTraceId();
      PythonWorkerProcess.generate(worker, REQUESTS);
    }
    worker.call(GenerationWorker::flushTelemetry, 5000L).get();
    workerEnv = PythonWorkerProcess.environment(PythonWorkerProcess.pid(config.runDir(), "generation_worker"));
    session.close();
  }

  @AfterAll
  static void stop() {
    if (session != null) {
      session.close();
    }
    configured.close();
    inherited.close();
  }

  @Test
  void export_pythonEngineSpansGoToTheConfiguredEndpointOnly() {
    List<OtlpHttpSink.Received> spans = configured.spans();
    Map<String, OtlpHttpSink.Received> byId = spans.stream()
        .collect(Collectors.toMap(OtlpHttpSink.Received::spanId, s -> s, (a, b) -> a));
    List<OtlpHttpSink.Received> engine = spans.stream().filter(s -> s.name().equals("llm_request")).toList();
    assertThat(engine).hasSize(REQUESTS).allSatisfy(s -> {
      assertThat(s.path()).isEqualTo("/v1/traces");
      assertThat(s.role()).isEqualTo("generation_worker");
      assertThat(s.traceId()).isEqualTo(traceId);
      assertThat(byId.get(s.parentSpanId())).isNotNull();
      assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.worker.generate");
    });
    assertThat(spans.stream().filter(s -> s.name().equals("it.caller"))).hasSize(1)
        .allSatisfy(s -> assertThat(s.role()).isEqualTo("driver"));
    assertThat(inherited.requests()).isZero();
  }

  @Test
  void workerEnvironment_theTracesVariablesNameTheConfiguredEndpoint() {
    assertThat(workerEnv).containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", configured.baseUrl() + "/v1/traces")
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        .containsEntry("OTEL_TRACES_SAMPLER", "parentbased_always_on");
  }
}
