package dev.ravel.workers.grpo;

import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;
import java.util.Objects;

/**
 * The outcome of {@link GrpoTrainer#train}: the new weights (version + 1) and what the step measured.
 */
public record TrainStep(ModelWeights weights, TrainMetrics metrics) implements Serializable {
  public TrainStep {
    Objects.requireNonNull(weights, "weights");
    Objects.requireNonNull(metrics, "metrics");
  }
}
