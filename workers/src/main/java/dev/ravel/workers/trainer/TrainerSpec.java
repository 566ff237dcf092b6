package dev.ravel.workers.trainer;

import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.TrainerState;
import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;

/**
 * How to build a policy trainer: the initial weights (also the frozen reference), the GRPO settings, and
 * for a resumed run the state it continues from (null for a new run).
 */
public record TrainerSpec(ModelWeights initial, GrpoConfig grpo, TrainerState resume) implements Serializable {
  /** A trainer for a new run. */
  public TrainerSpec(ModelWeights initial, GrpoConfig grpo) {
    this(initial, grpo, null);
  }
}
