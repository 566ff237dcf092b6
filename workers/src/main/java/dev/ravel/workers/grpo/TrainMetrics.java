package dev.ravel.workers.grpo;

import java.io.Serializable;

/**
 * What one GRPO step measured, the same from Ravel's Java and Python trainers. Over a step's passes
 * ({@code ppo_epochs}) and micro-batches: token shares and means are over every token evaluated, the KL is the
 * per-sequence token mean averaged over sequences, maxima are maxima, and the loss and gradient norm are means
 * over passes.
 *
 * @param version the weight version the step produced
 * @param loss the minimised objective
 * @param kl the estimate ({@code grpo.kl_estimator}) of KL(policy || reference); 0 without a reference
 * @param entropy token mean of the entropy of the policy's distribution (at the sampling temperature) where each
 *     completion token was sampled
 * @param clipFraction share of tokens whose clipped term was taken (no policy gradient): low, high and dual
 * @param clipLow share clipped at {@code 1 - clip_epsilon_low} (negative advantages)
 * @param clipHigh share clipped at {@code 1 + clip_epsilon_high} (positive advantages)
 * @param clipDual share held by the dual clip ({@code clip_ratio_c})
 * @param meanRatio token mean of the PPO ratio (to the behaviour policy, or with TIS to the step's start)
 * @param maxRatio its maximum
 * @param tisTruncated share of tokens whose importance weight reached {@code tis_cap} (0 without TIS)
 * @param gradNorm global L2 norm of the gradient before clipping
 * @param learningRate the learning rate of the step's first optimizer step
 * @param zeroAdvantageGroups groups whose rewards were all equal (no signal)
 * @param keptSequences sequences in the update (all but the dropped zero-advantage groups')
 * @param epochs passes over the batch (optimizer steps taken, or 0 when no sequence was kept)
 * @param meanReward mean reward of the batch (before any KL penalty)
 * @param tokens completion tokens in the batch
 * @param sequences trajectories in the batch
 */
public record TrainMetrics(long version, double loss, double kl, double entropy, double clipFraction,
    double clipLow, double clipHigh, double clipDual, double meanRatio, double maxRatio, double tisTruncated,
    double gradNorm, double learningRate, int zeroAdvantageGroups, int keptSequences, int epochs, double meanReward,
    long tokens, int sequences) implements Serializable {}
