package dev.ravel.workers.grpo;

import java.io.Serializable;

/**
 * What one GRPO step measured. Token quantities are averaged the way the loss is: per token within a
 * sequence, then over sequences, except {@link #clipFraction()} and {@link #meanRatio()}, which are plain
 * means over all completion tokens of the batch.
 *
 * @param version the weight version the step produced
 * @param loss the minimised objective, {@code -(surrogate - klBeta * kl)}
 * @param kl the k3 estimate of KL(policy || reference), before the step
 * @param clipFraction share of tokens whose clipped term was the smaller one (zero gradient)
 * @param meanRatio mean importance ratio {@code pi_theta / pi_behaviour}, before the step
 * @param gradNorm global L2 norm of the gradient before clipping
 * @param meanReward mean reward of the batch
 * @param tokens completion tokens trained on
 * @param sequences trajectories trained on
 */
public record TrainMetrics(long version, double loss, double kl, double clipFraction, double meanRatio,
    double gradNorm, double meanReward, int tokens, int sequences) implements Serializable {}
