package dev.ravel.workers.generation;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.EngineConfig;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.generation.openai.OpenAiBackend;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import io.ray.api.ObjectRef;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link GenerationWorker} over a {@link GenerationBackend}: the {@link EmbeddedEngine}, or inference
 * servers over HTTP ({@link OpenAiBackend}) when the spec names them. Either way each request is re-stamped
 * with the call's own trace context, so the engine's {@code llm_request} spans are children of
 * {@code rl.worker.generate}.
 */
public final class GenerationWorkerActor extends RavelActor implements GenerationWorker {
  private static final Logger LOG = LoggerFactory.getLogger(GenerationWorkerActor.class);
  /** The role of a launched server's spans, as {@code ravel serve}'s own. */
  static final String SERVER_ROLE = "inference_server";
  private final GenerationBackend backend;
  /**
   * Why the backend could not start (a server down, refusing Ravel's weight transfer, a launch that failed), or
   * null. Kept rather than thrown from the constructor: Ray reports a failed actor creation to the caller only as
   * "the actor died", so every call answers with this message instead, and the driver's first call (before any
   * step) stops the run with it.
   */
  private final RuntimeException startFailure;

  public GenerationWorkerActor(Payload<GenerationWorkerSpec> specPayload) {
    GenerationWorkerSpec spec = specPayload.value();
    TelemetryConfig t = telemetry().config();
    // the run's start-up trace: this worker's backend start, under its role's rl.run.actors (docs/design.md)
    var startup = startupSpan(SpanNames.WORKER_START_BACKEND);
    if (spec.servers() != null) {
      GenerationBackend started = null;
      RuntimeException failure = null;
      try {
        started = OpenAiBackend.start(spec.servers(), spec.modelName(), spec.initialWeights(),
            spec.kvTokenBudget(), spec.maxRunningRequests(), telemetry().openTelemetry(), t.runDir(),
            OpenAiBackend.tracedByRatio(t.engineTracing(), t.engineSampleRatio()),
            // what the run's OTLP receiver gives a launched server's resource (vLLM sets none of it), the worker
            // that launched it included
            Map.of(RavelAttributes.RUN_ID.getKey(), t.runId(), RavelAttributes.PROCESS_ROLE.getKey(), SERVER_ROLE,
                RavelAttributes.SERVICE_NAME.getKey(), t.serviceName(), RavelAttributes.PROCESS_PARENT_PID.getKey(),
                String.valueOf(ProcessHandle.current().pid())), t.exporter().writesFiles(),
            telemetry()::otlpRelay).spans(spans());
      } catch (RuntimeException e) {
        LOG.error("the generation backend did not start: {}", e.getMessage(), e);
        failure = e;
        startup.error(e);
      }
      this.backend = started;
      this.startFailure = failure;
      startup.close();
    } else {
      this.startFailure = null;
      EngineConfig config = EngineConfig.builder()
          .kvTokenBudget(spec.kvTokenBudget())
          .maxRunningRequests(spec.maxRunningRequests())
          .modelName(spec.modelName())
          .eosToken(spec.eosToken())
          .tracing(t.engineTracing())
          .sampleRatio(t.engineSampleRatio())
          .slowRequest(t.engineSlowRequest())
          .build();
      try (startup) {
        this.backend = new EmbeddedBackend(
            new EmbeddedEngine(config, TinyLm.of(spec.initialWeights()), telemetry().openTelemetry()));
      }
    }
  }

  /** The backend; the reason it did not start, as this call's failure, when it did not. */
  private GenerationBackend backend() {
    if (startFailure != null) {
      throw new IllegalStateException(startFailure.getMessage(), startFailure);
    }
    return backend;
  }

  @Override
  public List<GenerationResult> generate(List<GenerationRequest> requests) {
    TraceCarrier here = TraceCarrier.current();
    // the answer travels in the binary wire form a Python worker's does (ResultWire), not as serialized objects
    return dev.ravel.workers.engine.ResultWire.serializable(
        backend().generate(requests.stream().map(r -> r.withCarrier(here)).toList()));
  }

  @Override
  public List<GenerationResult> generateAsync(List<GenerationRequest> requests) {
    return generate(requests);
  }

  @Override
  public long updateWeights(ObjectRef<?> weights) {
    ModelWeights w;
    WeightsFileRef file = null;
    try (var s = spans().start(SpanGroup.REFIT, SpanNames.REFIT_FETCH)) {
      Object value = weights.get();
      if (value instanceof Payload<?> p && p.value() instanceof WeightsFileRef f) {
        file = f; // a Python trainer's weights file, which the servers read themselves: only its reference came
        w = null;
        s.set(RavelAttributes.REFIT_BYTES, 0L);
      } else if (value instanceof Payload<?> p && p.value() instanceof ModelWeights mw) {
        w = mw;
        s.set(RavelAttributes.REFIT_BYTES, w.byteSize());
      } else {
        throw new IllegalArgumentException("weights: expected Java model weights or a weights file, got "
            + (value == null ? "null" : value.getClass().getName()) + " (a Python trainer's weights need Python"
            + " workers, or an openai backend whose servers read weights files)");
      }
    }
    long served;
    if (file != null) {
      served = backend().updateWeights(file); // over HTTP: the backend opens its own stages (pause, load, resume)
    } else if (backend() instanceof EmbeddedBackend) {
      try (var s = spans().start(SpanGroup.REFIT, SpanNames.REFIT_LOAD)) {
        s.set(RavelAttributes.REFIT_BYTES, w.byteSize());
        served = backend().updateWeights(w);
      }
    } else {
      served = backend().updateWeights(w); // over HTTP: the backend opens its own stages (transfer, pause, load, resume)
    }
    // the worker's span says which version the engine confirmed serving when the call ended
    io.opentelemetry.api.trace.Span.current().setAttribute(RavelAttributes.WEIGHT_VERSION,
        served);
    return served;
  }

  @Override
  public EngineStats engineStats() {
    return backend().stats();
  }

  /**
   * The session's closing call: stops the backend first (a server this worker launched flushes its own
   * spans as it stops, so they are on disk when the run ends, and writes its counts), then flushes this
   * worker's spans. The counts returned are this worker's and its launched servers', together.
   */
  @Override
  public ExportStats flushTelemetry(long timeoutMs) {
    if (backend == null) { // it never started: nothing to stop, no server of its own to count
      return super.flushTelemetry(timeoutMs);
    }
    try {
      backend.close();
    } catch (RuntimeException e) {
      LOG.warn("stopping the generation backend failed: {}", e.toString());
    }
    return super.flushTelemetry(timeoutMs).plus(backend.launchedSpanCounts());
  }
}
