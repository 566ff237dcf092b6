package dev.ravel.workers.generation;

import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;

/**
 * How to build a generation worker: the engine's limits and the initial weights.
 *
 * @param kvTokenBudget tokens all running sequences may hold
 * @param maxRunningRequests the running batch's size limit
 * @param modelName the model name reported in engine spans and metrics
 * @param eosToken the token that ends a sequence
 * @param initialWeights the weights served until the first update
 */
public record GenerationWorkerSpec(int kvTokenBudget, int maxRunningRequests, String modelName, int eosToken,
    ModelWeights initialWeights) implements Serializable {}
