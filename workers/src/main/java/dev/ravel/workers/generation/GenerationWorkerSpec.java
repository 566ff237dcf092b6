package dev.ravel.workers.generation;

import dev.ravel.workers.generation.openai.ServerBackendSpec;
import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;

/**
 * How to build a generation worker: the engine's limits, the initial weights, and where requests are
 * served.
 *
 * @param kvTokenBudget tokens all running sequences may hold
 * @param maxRunningRequests the running batch's size limit
 * @param modelName the model name reported in engine spans and metrics, and requested from servers
 * @param eosToken the token that ends a sequence
 * @param initialWeights the weights served until the first update
 * @param servers null: the embedded engine in the worker's JVM; otherwise the inference servers (over HTTP)
 *     this worker is the client of
 */
public record GenerationWorkerSpec(int kvTokenBudget, int maxRunningRequests, String modelName, int eosToken,
    ModelWeights initialWeights, ServerBackendSpec servers) implements Serializable {

  /** A worker over the embedded engine. */
  public GenerationWorkerSpec(int kvTokenBudget, int maxRunningRequests, String modelName, int eosToken,
      ModelWeights initialWeights) {
    this(kvTokenBudget, maxRunningRequests, modelName, eosToken, initialWeights, null);
  }
}
