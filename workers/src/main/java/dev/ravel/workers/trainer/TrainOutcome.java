package dev.ravel.workers.trainer;

import dev.ravel.workers.model.ModelWeights;
import java.io.Serializable;

/** One GRPO update's result: the new weights and what the update measured. */
public record TrainOutcome(ModelWeights weights, double loss, double kl, double clipFraction, double meanRatio,
    double gradNorm, long tokens) implements Serializable {}
