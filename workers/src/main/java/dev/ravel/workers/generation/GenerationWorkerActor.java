package dev.ravel.workers.generation;

import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.EngineConfig;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import io.ray.api.ObjectRef;
import java.util.List;
import java.util.concurrent.ExecutionException;

/** {@link GenerationWorker} over the {@link EmbeddedEngine}. */
public final class GenerationWorkerActor extends RavelActor implements GenerationWorker {
  private final EmbeddedEngine engine;

  public GenerationWorkerActor(Payload<GenerationWorkerSpec> specPayload) {
    GenerationWorkerSpec spec = specPayload.value();
    TelemetryConfig t = telemetry().config();
    EngineConfig config = EngineConfig.builder()
        .kvTokenBudget(spec.kvTokenBudget())
        .maxRunningRequests(spec.maxRunningRequests())
        .modelName(spec.modelName())
        .eosToken(spec.eosToken())
        .tracing(t.engineTracing())
        .sampleRatio(t.engineSampleRatio())
        .slowRequest(t.engineSlowRequest())
        .build();
    this.engine = new EmbeddedEngine(config, TinyLm.of(spec.initialWeights()), telemetry().openTelemetry());
  }

  @Override
  public List<GenerationResult> generate(List<GenerationRequest> requests) {
    TraceCarrier here = TraceCarrier.current();
    return engine.generate(requests.stream().map(r -> r.withCarrier(here)).toList());
  }

  @Override
  public GenerationResult generateAsync(GenerationRequest request) {
    try {
      return engine.submit(request.withCarrier(TraceCarrier.current())).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while generating " + request.requestId(), e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("generation of " + request.requestId() + " failed", e.getCause());
    }
  }

  @Override
  public long updateWeights(ObjectRef<Payload<ModelWeights>> weights) {
    ModelWeights w = weights.get().value();
    engine.updateModel(TinyLm.of(w));
    return w.version();
  }

  @Override
  public EngineStats engineStats() {
    return engine.snapshot();
  }
}
