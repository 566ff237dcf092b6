package dev.ravel.workers.grpo;

import java.io.Serializable;
import java.util.Objects;

/**
 * The part of a {@link GrpoConfig} the loss reads ({@link GrpoConfig#lossSettings()}): how rewards become
 * advantages, how the per-token objective is clipped, penalised and weighted, and how it is aggregated.
 *
 * @param lossType how per-token objectives are aggregated
 * @param scaleRewards what advantages are divided by
 * @param advantageEps added to that standard deviation
 * @param filterZeroAdvantage whether groups of equal rewards are left out of the update
 * @param clipEpsilonLow the lower clip, {@code 1 - clipEpsilonLow}
 * @param clipEpsilonHigh the upper clip, {@code 1 + clipEpsilonHigh}
 * @param clipRatioC the dual clip's bound for negative advantages (0: off)
 * @param klEstimator the KL estimator
 * @param klBeta the KL penalty's weight (0: none)
 * @param klInReward whether the penalty is taken from the rewards instead of added to the loss
 * @param tisCap the truncated importance weight's cap (0: off)
 * @param maxNewTokens the completion budget, {@link LossType#DR_GRPO}'s normaliser
 */
public record LossSettings(LossType lossType, RewardScale scaleRewards, double advantageEps,
    boolean filterZeroAdvantage, double clipEpsilonLow, double clipEpsilonHigh, double clipRatioC,
    KlEstimator klEstimator, double klBeta, boolean klInReward, double tisCap, int maxNewTokens)
    implements Serializable {

  public LossSettings {
    Objects.requireNonNull(lossType, "lossType");
    Objects.requireNonNull(scaleRewards, "scaleRewards");
    Objects.requireNonNull(klEstimator, "klEstimator");
  }

  /** Whether the loss has a KL term (a penalty that is not in the reward). */
  public boolean klInLoss() {
    return klBeta != 0 && !klInReward;
  }

  /** Whether the ratio is against the trainer's own log-probs at the step's start, weighted by a truncated IS weight. */
  public boolean truncatedImportanceSampling() {
    return tisCap > 0;
  }
}
