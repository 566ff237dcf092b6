package dev.ravel.workers.grpo;

import dev.ravel.workers.model.AdamW;
import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;
import java.util.Objects;

/**
 * What a GRPO trainer needs to continue a run exactly where it stopped: the current weights (with their
 * version) and the optimizer's state. The run's sampling randomness is not state: every request's seed is
 * derived from the run's seed and the step.
 */
public record TrainerState(ModelWeights weights, AdamW.State optimizer) implements Serializable {
  public TrainerState {
    Objects.requireNonNull(weights, "weights");
    Objects.requireNonNull(optimizer, "optimizer");
  }
}
