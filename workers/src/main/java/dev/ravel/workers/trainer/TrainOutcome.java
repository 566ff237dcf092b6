package dev.ravel.workers.trainer;

import dev.ravel.workers.grpo.TrainMetrics;
import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;
import java.util.Objects;

/**
 * One GRPO update's result: what the update measured (with the version of the weights after it). A Java trainer
 * also returns the new weights; a Python trainer keeps its weights (the driver passes their object reference on
 * to the generation workers), so {@code weights} is null there.
 *
 * @param weights the new weights, or null when the trainer keeps them
 * @param metrics what the update measured, {@link TrainMetrics#version()} the version after it
 */
public record TrainOutcome(ModelWeights weights, TrainMetrics metrics) implements Serializable {

  public TrainOutcome {
    Objects.requireNonNull(metrics, "metrics");
    if (weights != null && weights.version() != metrics.version()) {
      throw new IllegalArgumentException("version: " + metrics.version() + " but the weights are version "
          + weights.version());
    }
  }

  /** The version of the weights after the update. */
  public long version() {
    return metrics.version();
  }
}
