package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.generation.GenerationWorker;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shell that ran {@code ray start} exported an OTLP endpoint and a sampler, the seed's caveat for Python
 * workers (vLLM reads {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} itself); engine tracing is off. The Python
 * generation worker's process sees those variables masked, and the endpoint receives nothing.
 */
final class PythonMaskedEndpointIT {
  static final List<String> VARS = List.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER");

  @TempDir
  static Path runs;

  static OtlpHttpSink inherited;
  static TelemetryConfig config;
  static DriverSession session;
  static List<GenerationResult> results;
  static Map<String, String> workerEnv;
  static int requests;

  @BeforeAll
  static void run() throws Exception {
    inherited = new OtlpHttpSink();
    config = TelemetryConfig.builder().runId("it-python-masked").runsDir(runs).engineTracing(false).build();
    session = DriverSession.builder(config).env(TestEnv.clean())
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces")
        .headEnv("OTEL_EXPORTER_OTLP_ENDPOINT", inherited.baseUrl())
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        .headEnv("OTEL_TRACES_SAMPLER", "always_on")
        .start();
    RavelActorHandle<GenerationWorker> worker = PythonWorkerProcess.start(session);
    results = PythonWorkerProcess.generate(worker, 8);
    worker.call(GenerationWorker::flushTelemetry, 5000L).get();
    workerEnv = PythonWorkerProcess.environment(PythonWorkerProcess.pid(config.runDir(), "generation_worker"));
    Thread.sleep(1000);
    requests = inherited.requests();
    session.close();
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
  void workerEnvironment_thePythonWorkerSeesTheInheritedVariablesMasked() {
    assertThat(workerEnv).containsKeys("RAVEL_TELEMETRY_RUN_ID");
    for (String name : VARS) {
      assertThat(workerEnv.get(name)).as(name).isEmpty();
    }
  }

  @Test
  void export_theInheritedEndpointReceivesNothingAndTheSpansAreInTheRunFolder() {
    assertThat(results).hasSize(8).allSatisfy(r -> assertThat(r.succeeded()).isTrue());
    assertThat(requests).isZero();
    assertThat(inherited.requests()).isZero();
    RunTraces traces = RunTraces.readDir(config.runDir());
    assertThat(traces.named("rl.worker.generate")).hasSize(1);
    assertThat(traces.named("llm_request")).isEmpty();
  }
}
