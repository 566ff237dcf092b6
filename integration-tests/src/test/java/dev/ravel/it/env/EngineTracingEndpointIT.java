package dev.ravel.it.env;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.demo.RelayDemo;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.python.PythonWorkerProcess;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.demo.Responder;
import dev.ravel.workers.generation.GenerationWorker;
import java.nio.file.Path;
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
 * Engine tracing on, the run configured (in the driver's environment) to export over OTLP http/protobuf to
 * one endpoint while the raylet's shell exported another, for a Java engine (the relay demo's responder) and a
 * Python one (a generation worker, whose {@code llm_request} spans carry vLLM's names) in one session on one
 * head: the actors use the configured endpoint, for Ravel's spans and for the engine's, each engine span a
 * child of its worker's span, and the inherited one receives nothing. Each worker's process is given the
 * configured endpoint in the traces variables, for an engine (vLLM) that reads them.
 */
final class EngineTracingEndpointIT {
  static final int PYTHON_REQUESTS = 6;

  @TempDir
  static Path runs;

  static OtlpHttpSink configured;
  static OtlpHttpSink inherited;
  static DriverSession session;
  static RelayDemo.Result relay;
  static Map<String, String> responderView;
  static String pythonTraceId;
  static Map<String, String> pythonWorkerEnv;

  @BeforeAll
  static void run() throws Exception {
    configured = new OtlpHttpSink();
    inherited = new OtlpHttpSink();
    Map<String, String> env = new HashMap<>(TestEnv.clean());
    env.put("OTEL_EXPORTER_OTLP_ENDPOINT", configured.baseUrl());
    env.put("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
    TelemetryConfig config = TelemetryConfig.builder().runId("it-engine").runsDir(runs).engineTracing(true)
        .engineSampleRatio(1.0).exporter(ExporterKind.BOTH).build();
    session = DriverSession.builder(config).env(env)
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces")
        .headEnv("OTEL_TRACES_SAMPLER", "always_off")
        .start();
    RelayDemo demo = new RelayDemo(session);
    relay = demo.run(2);
    responderView = demo.responder().call(Responder::environment,
        List.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER")).get();

    RavelActorHandle<GenerationWorker> worker = PythonWorkerProcess.start(session);
    try (ScopedSpan s = session.spans().start(SpanGroup.STEP, "it.caller")) {
      pythonTraceId = s.spanContext().getTraceId();
      PythonWorkerProcess.generate(worker, PYTHON_REQUESTS);
    }
    assertThat(worker.call(GenerationWorker::flushTelemetry, 60_000L).get()).isNotNull();
    pythonWorkerEnv = PythonWorkerProcess.environment(PythonWorkerProcess.pid(config.runDir(), "generation_worker"));
    session.close(); // every process flushes: the sink has all it will get
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
  void workerEnvironment_javaEngineSeesTheConfiguredEndpointNotTheInheritedOne() {
    assertThat(responderView)
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", configured.baseUrl() + "/v1/traces")
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        .containsEntry("OTEL_TRACES_SAMPLER", "parentbased_always_on");
  }

  @Test
  void workerEnvironment_pythonWorkersTracesVariablesNameTheConfiguredEndpoint() {
    assertThat(pythonWorkerEnv)
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", configured.baseUrl() + "/v1/traces")
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        .containsEntry("OTEL_TRACES_SAMPLER", "parentbased_always_on");
  }

  @Test
  void export_allProcessesAndTheJavaEngineExportToTheConfiguredEndpoint() {
    List<OtlpHttpSink.Received> spans = configured.spans();
    assertThat(spans).allSatisfy(s -> assertThat(s.path()).isEqualTo("/v1/traces"));
    Set<String> roles = spans.stream().filter(s -> s.traceId().equals(relay.traceId()))
        .map(OtlpHttpSink.Received::role).collect(Collectors.toSet());
    assertThat(roles).contains("driver", "relay", "responder", "engine");
    Map<String, OtlpHttpSink.Received> byId = byId(spans);
    List<OtlpHttpSink.Received> engine = spans.stream()
        .filter(s -> s.name().equals("llm_request") && s.traceId().equals(relay.traceId())).toList();
    assertThat(engine).hasSize(2).allSatisfy(s -> {
      assertThat(byId.get(s.parentSpanId())).isNotNull();
      assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.responder.respond");
    });
    assertThat(inherited.requests()).isZero();
  }

  @Test
  void export_pythonEngineSpansGoToTheConfiguredEndpointOnly() {
    List<OtlpHttpSink.Received> spans = configured.spans();
    Map<String, OtlpHttpSink.Received> byId = byId(spans);
    List<OtlpHttpSink.Received> engine = spans.stream()
        .filter(s -> s.name().equals("llm_request") && s.role().equals("generation_worker")).toList();
    assertThat(engine).hasSize(PYTHON_REQUESTS).allSatisfy(s -> {
      assertThat(s.path()).isEqualTo("/v1/traces");
      assertThat(s.traceId()).isEqualTo(pythonTraceId);
      assertThat(byId.get(s.parentSpanId())).isNotNull();
      assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.worker.generate");
    });
    assertThat(spans.stream().filter(s -> s.name().equals("it.caller"))).hasSize(1)
        .allSatisfy(s -> assertThat(s.role()).isEqualTo("driver"));
    assertThat(inherited.requests()).isZero();
  }

  private static Map<String, OtlpHttpSink.Received> byId(List<OtlpHttpSink.Received> spans) {
    return spans.stream().collect(Collectors.toMap(OtlpHttpSink.Received::spanId, s -> s, (a, b) -> a));
  }
}
