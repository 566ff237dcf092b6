package dev.ravel.workers.generation;

import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.model.ModelWeights;
import java.util.List;

/**
 * Where a generation worker's requests are served: the engine in the worker's JVM, or inference servers
 * over HTTP. Each request's {@link GenerationRequest#carrier() carrier} is the context its engine span
 * ({@code llm_request}) becomes a child of. A request the backend cannot serve yields a result that did
 * not {@linkplain GenerationResult#succeeded() succeed}, with the reason, rather than an exception.
 */
public interface GenerationBackend extends AutoCloseable {
  /** Generates every request (batched by the engine); results in the order of {@code requests}. */
  List<GenerationResult> generate(List<GenerationRequest> requests);

  /** Generates one request; safe to call from many threads at once. */
  GenerationResult generate(GenerationRequest request);

  /**
   * Serves later requests with {@code weights}; returns once the engine serves that version, with the version
   * the engine (or every server) confirmed.
   */
  long updateWeights(ModelWeights weights);

  /**
   * Serves later requests with the weights in {@code file} (a Python trainer's, which servers load themselves);
   * returns the version every server confirmed. Only inference servers that read weights files take these.
   *
   * @throws UnsupportedOperationException for a backend whose engine cannot load a Hugging Face weights file
   */
  default long updateWeights(WeightsFileRef file) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot load a weights file ("
        + file.path() + "): a Python trainer's weights need inference servers that read them (generation.backend:"
        + " openai with vLLM) or Python generation workers");
  }

  /** The engine's counters. */
  EngineStats stats();

  /**
   * The span counts of the servers this backend launched, as each wrote them when it stopped (after
   * {@link #close()}); none (zero ended, no exporter) for a backend that launched none.
   */
  default ExportStats launchedSpanCounts() {
    return ExportStats.NONE;
  }

  /** Stops the engine (and any server this backend started). Idempotent. */
  @Override
  void close();
}
