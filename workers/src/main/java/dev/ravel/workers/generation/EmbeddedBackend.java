package dev.ravel.workers.generation;

import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import java.util.List;
import java.util.concurrent.ExecutionException;

/** {@link GenerationBackend} over the {@link EmbeddedEngine} in the worker's JVM. */
final class EmbeddedBackend implements GenerationBackend {
  private final EmbeddedEngine engine;

  EmbeddedBackend(EmbeddedEngine engine) {
    this.engine = engine;
  }

  @Override
  public List<GenerationResult> generate(List<GenerationRequest> requests) {
    return engine.generate(requests);
  }

  @Override
  public GenerationResult generate(GenerationRequest request) {
    try {
      return engine.submit(request).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while generating " + request.requestId(), e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("generation of " + request.requestId() + " failed", e.getCause());
    }
  }

  @Override
  public long updateWeights(ModelWeights weights) {
    return engine.updateModelAndWait(TinyLm.of(weights));
  }

  @Override
  public EngineStats stats() {
    return engine.snapshot();
  }

  @Override
  public void close() {
    engine.close();
  }
}
