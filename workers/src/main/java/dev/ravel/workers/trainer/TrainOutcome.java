package dev.ravel.workers.trainer;

import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;

/**
 * One GRPO update's result: the version of the weights after it, and what the update measured. A Java trainer
 * also returns the new weights; a Python trainer keeps its weights (the driver passes their object reference
 * on to the generation workers), so {@code weights} is null there.
 *
 * @param weights the new weights, or null when the trainer keeps them
 * @param version the version of the weights after the update
 */
public record TrainOutcome(ModelWeights weights, long version, double loss, double kl, double clipFraction,
    double meanRatio, double gradNorm, long tokens) implements Serializable {

  public TrainOutcome {
    if (weights != null && weights.version() != version) {
      throw new IllegalArgumentException("version: " + version + " but the weights are version " + weights.version());
    }
  }

  /** The outcome of a trainer that returns its weights. */
  public TrainOutcome(ModelWeights weights, double loss, double kl, double clipFraction, double meanRatio,
      double gradNorm, long tokens) {
    this(weights, weights.version(), loss, kl, clipFraction, meanRatio, gradNorm, tokens);
  }
}
