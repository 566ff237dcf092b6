package dev.ravel.it.env;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.demo.RelayDemo;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.actor.RavelActors;
import dev.ravel.workers.demo.Responder;
import dev.ravel.workers.demo.ResponderActor;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shell that ran {@code ray start} exported a traces endpoint and sampler; engine tracing is off.
 * Actors created by Ravel see those variables masked and export nothing there, while an actor created
 * without the policy (the control) inherits them and does export there.
 */
final class MaskedEngineEndpointIT {
  static final List<String> VARS = List.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
      "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG");

  @TempDir
  static Path runs;

  static OtlpHttpSink inherited;
  static DriverSession session;
  static Map<String, String> relayView;
  static Map<String, String> responderView;
  static int requestsAfterRavelActors;
  static Map<String, String> controlView;

  @BeforeAll
  static void run() throws Exception {
    inherited = new OtlpHttpSink();
    TelemetryConfig config = TelemetryConfig.builder().runId("it-masked").runsDir(runs).engineTracing(false).build();
    session = DriverSession.builder(config).env(TestEnv.clean())
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces")
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        .headEnv("OTEL_TRACES_SAMPLER", "always_on")
        .headEnv("OTEL_TRACES_SAMPLER_ARG", "1.0")
        .start();
    RelayDemo demo = new RelayDemo(session);
    demo.run(3);
    relayView = demo.relay().call(dev.ravel.workers.demo.Relay::environment, VARS).get();
    responderView = demo.responder().call(Responder::environment, VARS).get();
    demo.responder().call(Responder::flushTelemetry, 5000L).get();
    Thread.sleep(1000);
    requestsAfterRavelActors = inherited.requests();

    // control: the same cluster, an actor created without Ravel's worker environment
    RavelActorHandle<Responder> control = RavelActors.actor(ResponderActor::new, Responder.class).remote();
    controlView = control.call(Responder::environment, VARS).get();
    control.call(Responder::respond, "unfiltered").get();
  }

  @AfterAll
  static void stop() {
    if (session != null) {
      session.close();
    }
    if (inherited != null) {
      inherited.close();
    }
  }

  @Test
  void workerEnvironment_masksInheritedTraceVariablesInBothActors() {
    for (Map<String, String> view : List.of(relayView, responderView)) {
      assertThat(view).containsOnlyKeys(VARS).allSatisfy((k, v) -> assertThat(v).as(k).isEmpty());
    }
  }

  @Test
  void workerEnvironment_actorsExportNothingToTheInheritedEndpoint() {
    assertThat(requestsAfterRavelActors).isZero();
  }

  @Test
  void control_anActorWithoutThePolicyInheritsTheEndpointAndExportsThere() {
    assertThat(controlView).containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces");
    assertThat(inherited.spans()).extracting(OtlpHttpSink.Received::name).contains("llm_request");
  }
}
