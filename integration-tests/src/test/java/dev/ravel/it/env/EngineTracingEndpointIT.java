package dev.ravel.it.env;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.demo.RelayDemo;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.workers.demo.Responder;
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
 * one endpoint while the raylet's shell exported another: the actors use the configured endpoint, for
 * Ravel's spans and for the engine's, and the inherited one receives nothing.
 */
final class EngineTracingEndpointIT {
  @TempDir
  static Path runs;

  static OtlpHttpSink configured;
  static OtlpHttpSink inherited;
  static DriverSession session;
  static RelayDemo.Result result;
  static Map<String, String> responderView;

  @BeforeAll
  static void run() throws Exception {
    configured = new OtlpHttpSink();
    inherited = new OtlpHttpSink();
    Map<String, String> env = new HashMap<>(TestEnv.clean());
    env.put("OTEL_EXPORTER_OTLP_ENDPOINT", configured.baseUrl());
    env.put("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
    TelemetryConfig config = TelemetryConfig.builder().runId("it-engine").runsDir(runs).engineTracing(true)
        .exporter(ExporterKind.BOTH).build();
    session = DriverSession.builder(config).env(env)
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces")
        .headEnv("OTEL_TRACES_SAMPLER", "always_off")
        .start();
    RelayDemo demo = new RelayDemo(session);
    result = demo.run(2);
    responderView = demo.responder().call(Responder::environment,
        List.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER")).get();
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
  void workerEnvironment_engineSeesTheConfiguredEndpointNotTheInheritedOne() {
    assertThat(responderView)
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", configured.baseUrl() + "/v1/traces")
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        .containsEntry("OTEL_TRACES_SAMPLER", "parentbased_always_on");
  }

  @Test
  void export_allProcessesAndTheEngineExportToTheConfiguredEndpoint() {
    List<OtlpHttpSink.Received> spans = configured.spans();
    assertThat(spans).allSatisfy(s -> assertThat(s.path()).isEqualTo("/v1/traces"));
    Set<String> roles = spans.stream().filter(s -> s.traceId().equals(result.traceId()))
        .map(OtlpHttpSink.Received::role).collect(Collectors.toSet());
    assertThat(roles).contains("driver", "relay", "responder", "engine");
    Map<String, OtlpHttpSink.Received> byId = spans.stream()
        .collect(Collectors.toMap(OtlpHttpSink.Received::spanId, s -> s, (a, b) -> a));
    List<OtlpHttpSink.Received> engine = spans.stream().filter(s -> s.name().equals("llm_request")).toList();
    assertThat(engine).hasSize(2).allSatisfy(s -> {
      assertThat(s.traceId()).isEqualTo(result.traceId());
      assertThat(byId.get(s.parentSpanId())).isNotNull();
      assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.responder.respond");
    });
    assertThat(inherited.requests()).isZero();
  }
}
