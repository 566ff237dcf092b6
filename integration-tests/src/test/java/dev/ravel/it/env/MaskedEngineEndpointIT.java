package dev.ravel.it.env;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.demo.RelayDemo;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.python.PythonWorkerProcess;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.actor.RavelActors;
import dev.ravel.workers.demo.Responder;
import dev.ravel.workers.demo.ResponderActor;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.generation.GenerationWorker;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shell that ran {@code ray start} exported an OTLP endpoint, a traces endpoint and a sampler (the seed's
 * caveat: vLLM reads {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} itself); engine tracing is off. Java actors
 * (the relay demo) and a Python generation worker created by Ravel, in one session on one head, see those
 * variables masked and export nothing there, while an actor created without the policy (the control) inherits
 * them and does export there.
 */
final class MaskedEngineEndpointIT {
  /** How long the control's span may take to reach the inherited endpoint (its batches go out in about 1 s). */
  static final long CONTROL_EXPORT_S = 60;
  static final List<String> VARS = List.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG");

  @TempDir
  static Path runs;

  static OtlpHttpSink inherited;
  static TelemetryConfig config;
  static DriverSession session;
  static List<GenerationResult> pythonResults;
  static Map<String, String> pythonWorkerEnv;
  static Map<String, String> relayView;
  static Map<String, String> responderView;
  static int requestsAfterRavelActors;
  static Map<String, String> controlView;

  @BeforeAll
  static void run() throws Exception {
    inherited = new OtlpHttpSink();
    config = TelemetryConfig.builder().runId("it-masked").runsDir(runs).engineTracing(false).build();
    session = DriverSession.builder(config).env(TestEnv.clean())
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces")
        .headEnv("OTEL_EXPORTER_OTLP_ENDPOINT", inherited.baseUrl())
        .headEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        .headEnv("OTEL_TRACES_SAMPLER", "always_on")
        .headEnv("OTEL_TRACES_SAMPLER_ARG", "1.0")
        .start();
    RavelActorHandle<GenerationWorker> worker = PythonWorkerProcess.start(session);
    pythonResults = PythonWorkerProcess.generate(worker, 8);
    flushedCompletely(worker.call(GenerationWorker::flushTelemetry, 60_000L).get(), "python worker");
    pythonWorkerEnv = PythonWorkerProcess.environment(PythonWorkerProcess.pid(config.runDir(), "generation_worker"));

    RelayDemo demo = new RelayDemo(session);
    demo.run(3);
    relayView = demo.relay().call(dev.ravel.workers.demo.Relay::environment, VARS).get();
    responderView = demo.responder().call(Responder::environment, VARS).get();
    flushedCompletely(demo.responder().call(Responder::flushTelemetry, 60_000L).get(), "responder");
    flushedCompletely(demo.relay().call(dev.ravel.workers.demo.Relay::flushTelemetry, 60_000L).get(), "relay");
    // No window waited out: each flush above returned with nothing pending for any exporter of those processes,
    // and an OTLP export ends only when the receiver has answered. Had one of them taken up the inherited
    // endpoint, the spans it had ended by then (the generation and the relay's calls) would already be counted.
    requestsAfterRavelActors = inherited.requests();

    // control: the same cluster, an actor created without Ravel's worker environment
    RavelActorHandle<Responder> control = RavelActors.actor(ResponderActor::new, Responder.class).remote();
    controlView = control.call(Responder::environment, VARS).get();
    control.call(Responder::respond, "unfiltered").get();
  }

  /** The flush returned with every span the process had ended exported (or failed, or dropped), none still queued. */
  private static void flushedCompletely(ExportStats stats, String who) {
    assertThat(stats.ended()).as("%s ended spans", who).isPositive();
    assertThat(stats.pending()).as("%s spans still pending after its flush: %s", who, stats).isZero();
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
  void workerEnvironment_masksInheritedTraceVariablesInTheJavaActors() {
    for (Map<String, String> view : List.of(relayView, responderView)) {
      assertThat(view).containsOnlyKeys(VARS).allSatisfy((k, v) -> assertThat(v).as(k).isEmpty());
    }
  }

  @Test
  void workerEnvironment_thePythonWorkerSeesTheInheritedVariablesMasked() {
    assertThat(pythonWorkerEnv).containsKeys("RAVEL_TELEMETRY_RUN_ID");
    for (String name : VARS) {
      assertThat(pythonWorkerEnv.get(name)).as(name).isEmpty();
    }
  }

  @Test
  void workerEnvironment_actorsExportNothingToTheInheritedEndpointAndThePythonSpansAreInTheRunFolder() {
    assertThat(pythonResults).hasSize(8).allSatisfy(r -> assertThat(r.succeeded()).isTrue());
    assertThat(requestsAfterRavelActors).isZero();
    RunTraces traces = RunTraces.readDir(config.runDir());
    assertThat(traces.named("rl.worker.generate")).hasSize(1);
    assertThat(traces.named("llm_request")).isEmpty();
  }

  @Test
  void control_anActorWithoutThePolicyInheritsTheEndpointAndExportsThere() throws InterruptedException {
    assertThat(controlView).containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces");
    // the control exports its spans in the background (batched): its request's span is waited for at the
    // inherited endpoint, up to CONTROL_EXPORT_S, not assumed to be there already
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CONTROL_EXPORT_S);
    while (System.nanoTime() < deadline
        && inherited.spans().stream().noneMatch(s -> s.name().equals("llm_request"))) {
      Thread.sleep(100);
    }
    assertThat(inherited.spans()).extracting(OtlpHttpSink.Received::name).contains("llm_request");
  }
}
