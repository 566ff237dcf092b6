package dev.ravel.workers.trainer;

import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;

/** How to build a policy trainer: the initial weights (also the frozen reference) and the GRPO settings. */
public record TrainerSpec(ModelWeights initial, GrpoConfig grpo) implements Serializable {}
