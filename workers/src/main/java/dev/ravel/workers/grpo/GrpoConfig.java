package dev.ravel.workers.grpo;

import java.io.ObjectStreamException;
import java.io.Serializable;
import java.util.Arrays;
import java.util.List;

/**
 * Hyper-parameters of GRPO (Shao et al. 2024, "DeepSeekMath", section 4.1) and of its optimisation: per step,
 * {@link #promptsPerStep()} prompts are each answered {@link #groupSize()} times, each completion's advantage is
 * its reward relative to its group ({@link #scaleRewards()}), and the policy maximises the clipped surrogate
 * ({@link #clipEpsilonLow()}, {@link #clipEpsilonHigh()}, {@link #clipRatioC()}) minus {@link #klBeta()} times a
 * KL estimate ({@link #klEstimator()}) to the reference policy, aggregated by {@link #lossType()}. Both of
 * Ravel's trainers (Java and Python) read the same settings and compute the same loss. Immutable; build one
 * with {@link #builder()} (an invalid value is an {@link IllegalArgumentException} naming the field).
 */
public final class GrpoConfig implements Serializable {
  private static final long serialVersionUID = 2L;

  private final int groupSize;
  private final int promptsPerStep;
  private final long seed;
  private final double temperature;
  private final double learningRate;
  private final double weightDecay;
  private final double maxGradNorm;
  private final double advantageEps;
  private final double klBeta;
  private final LossType lossType;
  private final RewardScale scaleRewards;
  private final boolean filterZeroAdvantage;
  private final double clipEpsilonLow;
  private final double clipEpsilonHigh;
  private final double clipRatioC;
  private final KlEstimator klEstimator;
  private final boolean klInReward;
  private final int ppoEpochs;
  private final int microBatchSize;
  private final LrSchedule lrSchedule;
  private final int warmupSteps;
  private final int totalSteps;
  private final double tisCap;
  private final int maxNewTokens;

  private GrpoConfig(Builder b) {
    this.groupSize = b.groupSize;
    this.promptsPerStep = b.promptsPerStep;
    this.seed = b.seed;
    this.temperature = b.temperature;
    this.learningRate = b.learningRate;
    this.weightDecay = b.weightDecay;
    this.maxGradNorm = b.maxGradNorm;
    this.advantageEps = b.advantageEps;
    this.klBeta = b.klBeta;
    this.lossType = b.lossType;
    this.scaleRewards = b.scaleRewards;
    this.filterZeroAdvantage = b.filterZeroAdvantage;
    this.clipEpsilonLow = b.clipEpsilonLow;
    this.clipEpsilonHigh = b.clipEpsilonHigh;
    this.clipRatioC = b.clipRatioC;
    this.klEstimator = b.klEstimator;
    this.klInReward = b.klInReward;
    this.ppoEpochs = b.ppoEpochs;
    this.microBatchSize = b.microBatchSize;
    this.lrSchedule = b.lrSchedule;
    this.warmupSteps = b.warmupSteps;
    this.totalSteps = b.totalSteps;
    this.tisCap = b.tisCap;
    this.maxNewTokens = b.maxNewTokens;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this config's values, to derive a changed copy. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.groupSize = groupSize;
    b.promptsPerStep = promptsPerStep;
    b.seed = seed;
    b.temperature = temperature;
    b.learningRate = learningRate;
    b.weightDecay = weightDecay;
    b.maxGradNorm = maxGradNorm;
    b.advantageEps = advantageEps;
    b.klBeta = klBeta;
    b.lossType = lossType;
    b.scaleRewards = scaleRewards;
    b.filterZeroAdvantage = filterZeroAdvantage;
    b.clipEpsilonLow = clipEpsilonLow;
    b.clipEpsilonHigh = clipEpsilonHigh;
    b.clipRatioC = clipRatioC;
    b.klEstimator = klEstimator;
    b.klInReward = klInReward;
    b.ppoEpochs = ppoEpochs;
    b.microBatchSize = microBatchSize;
    b.lrSchedule = lrSchedule;
    b.warmupSteps = warmupSteps;
    b.totalSteps = totalSteps;
    b.tisCap = tisCap;
    b.maxNewTokens = maxNewTokens;
    return b;
  }

  /** G: completions sampled per prompt, the group advantages are relative to. Default 8. */
  public int groupSize() {
    return groupSize;
  }

  /** Prompts per training step; a step trains on {@code promptsPerStep * groupSize} trajectories. Default 32. */
  public int promptsPerStep() {
    return promptsPerStep;
  }

  /** Trajectories per step: {@code promptsPerStep * groupSize}. */
  public int batchSize() {
    return promptsPerStep * groupSize;
  }

  /** Seed of the run's random choices (prompt sampling, token sampling). Default 0. */
  public long seed() {
    return seed;
  }

  /**
   * The temperature the completions were sampled at: the loss takes log-probs at the same temperature (0 counts
   * as 1). The rest of sampling (top-p, seeds) is the generation side's {@code SamplingParams}. Default 1.
   */
  public double temperature() {
    return temperature;
  }

  /** AdamW's base step size (scaled by {@link #lrSchedule()}). Default 0.03 (suited to {@code ModelSpec.tiny}). */
  public double learningRate() {
    return learningRate;
  }

  /** AdamW decoupled weight decay. Default 0. */
  public double weightDecay() {
    return weightDecay;
  }

  /** The gradient is clipped to this global L2 norm before each optimizer step; 0 disables. Default 1. */
  public double maxGradNorm() {
    return maxGradNorm;
  }

  /** Added to the standard deviation a reward's distance to its group mean is divided by. Default 1e-6. */
  public double advantageEps() {
    return advantageEps;
  }

  /** Weight of the KL penalty to the reference policy; 0: no penalty and no reference pass. Default 0.04. */
  public double klBeta() {
    return klBeta;
  }

  /** How the per-token objectives are aggregated. Default {@link LossType#GRPO}. */
  public LossType lossType() {
    return lossType;
  }

  /** What advantages are divided by. Default {@link RewardScale#GROUP}. */
  public RewardScale scaleRewards() {
    return scaleRewards;
  }

  /**
   * Whether groups whose rewards are all equal (no signal) are left out of the update, normaliser included
   * (DAPO's dynamic sampling without the resampling). Default false.
   */
  public boolean filterZeroAdvantage() {
    return filterZeroAdvantage;
  }

  /** Ratios below {@code 1 - clipEpsilonLow} are clipped (negative advantages). Default 0.2. */
  public double clipEpsilonLow() {
    return clipEpsilonLow;
  }

  /** Ratios above {@code 1 + clipEpsilonHigh} are clipped (positive advantages; DAPO's clip-higher). Default 0.2. */
  public double clipEpsilonHigh() {
    return clipEpsilonHigh;
  }

  /**
   * Dual clip (Ye et al. 2020): for a negative advantage the objective is at least {@code clipRatioC * A}, so a
   * huge ratio cannot make an unbounded update; 0 disables, else above 1. Default 0.
   */
  public double clipRatioC() {
    return clipRatioC;
  }

  /** The KL estimator. Default {@link KlEstimator#K3}. */
  public KlEstimator klEstimator() {
    return klEstimator;
  }

  /**
   * Whether the KL penalty is taken from each completion's reward ({@code r - klBeta * sum_t KL_t} with the
   * behaviour log-probs, before the advantages) instead of added to the loss. Default false.
   */
  public boolean klInReward() {
    return klInReward;
  }

  /** Passes over each step's batch, one optimizer step each (TRL's {@code num_iterations}). Default 1. */
  public int ppoEpochs() {
    return ppoEpochs;
  }

  /** Sequences per gradient-accumulation micro-batch; 0: the whole batch at once. Default 0. */
  public int microBatchSize() {
    return microBatchSize;
  }

  /** The learning-rate schedule over the run's optimizer steps. Default {@link LrSchedule#CONSTANT}. */
  public LrSchedule lrSchedule() {
    return lrSchedule;
  }

  /** Training steps of linear warmup at the start of {@link #lrSchedule()}. Default 0. */
  public int warmupSteps() {
    return warmupSteps;
  }

  /** The run's training steps, the length of {@link #lrSchedule()}. Default 30. */
  public int totalSteps() {
    return totalSteps;
  }

  /**
   * Truncated importance sampling (async off-policy correction): above 0, the PPO ratio is taken against the
   * trainer's own log-probs at the start of the step and each token is weighted by
   * {@code min(pi_old / pi_behaviour, tisCap)}; 0 disables (the ratio is against the behaviour log-probs).
   * Default 0.
   */
  public double tisCap() {
    return tisCap;
  }

  /** The completion budget in tokens, {@link LossType#DR_GRPO}'s constant normaliser. Default 4. */
  public int maxNewTokens() {
    return maxNewTokens;
  }

  /** The loss settings the trainers hand to {@link GrpoLoss}: the KL is in the loss unless {@link #klInReward()}. */
  public LossSettings lossSettings() {
    return new LossSettings(lossType, scaleRewards, advantageEps, filterZeroAdvantage, clipEpsilonLow,
        clipEpsilonHigh, clipRatioC, klEstimator, klBeta, klInReward, tisCap, maxNewTokens);
  }

  /** The learning rate of the optimizer step after {@code taken} optimizer steps. */
  public double learningRateAt(long taken) {
    long epochs = ppoEpochs;
    return learningRate * lrSchedule.factor(taken, warmupSteps * epochs, totalSteps * epochs);
  }

  private Object readResolve() throws ObjectStreamException {
    return toBuilder().build();
  }

  private List<Object> values() {
    return Arrays.asList(groupSize, promptsPerStep, seed, temperature, learningRate, weightDecay, maxGradNorm,
        advantageEps, klBeta, lossType, scaleRewards, filterZeroAdvantage, clipEpsilonLow, clipEpsilonHigh,
        clipRatioC, klEstimator, klInReward, ppoEpochs, microBatchSize, lrSchedule, warmupSteps, totalSteps, tisCap,
        maxNewTokens);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof GrpoConfig c && c.values().equals(values());
  }

  @Override
  public int hashCode() {
    return values().hashCode();
  }

  @Override
  public String toString() {
    return "GrpoConfig{groupSize=" + groupSize + ", promptsPerStep=" + promptsPerStep + ", seed=" + seed
        + ", temperature=" + temperature + ", learningRate=" + learningRate + ", weightDecay=" + weightDecay
        + ", maxGradNorm=" + maxGradNorm + ", " + lossSettings() + ", ppoEpochs=" + ppoEpochs + ", microBatchSize="
        + microBatchSize + ", lrSchedule=" + lrSchedule + ", warmupSteps=" + warmupSteps + ", totalSteps="
        + totalSteps + "}";
  }

  /** Collects the values of a {@link GrpoConfig}; {@link #build()} validates them. */
  public static final class Builder {
    private int groupSize = 8;
    private int promptsPerStep = 32;
    private long seed = 0;
    private double temperature = 1.0;
    private double learningRate = 0.03;
    private double weightDecay = 0;
    private double maxGradNorm = 1.0;
    private double advantageEps = 1e-6;
    private double klBeta = 0.04;
    private LossType lossType = LossType.GRPO;
    private RewardScale scaleRewards = RewardScale.GROUP;
    private boolean filterZeroAdvantage = false;
    private double clipEpsilonLow = 0.2;
    private double clipEpsilonHigh = 0.2;
    private double clipRatioC = 0;
    private KlEstimator klEstimator = KlEstimator.K3;
    private boolean klInReward = false;
    private int ppoEpochs = 1;
    private int microBatchSize = 0;
    private LrSchedule lrSchedule = LrSchedule.CONSTANT;
    private int warmupSteps = 0;
    private int totalSteps = 30;
    private double tisCap = 0;
    private int maxNewTokens = 4;

    private Builder() {}

    public Builder groupSize(int v) {
      this.groupSize = v;
      return this;
    }

    public Builder promptsPerStep(int v) {
      this.promptsPerStep = v;
      return this;
    }

    public Builder seed(long v) {
      this.seed = v;
      return this;
    }

    public Builder temperature(double v) {
      this.temperature = v;
      return this;
    }

    public Builder learningRate(double v) {
      this.learningRate = v;
      return this;
    }

    public Builder weightDecay(double v) {
      this.weightDecay = v;
      return this;
    }

    public Builder maxGradNorm(double v) {
      this.maxGradNorm = v;
      return this;
    }

    public Builder advantageEps(double v) {
      this.advantageEps = v;
      return this;
    }

    public Builder klBeta(double v) {
      this.klBeta = v;
      return this;
    }

    public Builder lossType(LossType v) {
      this.lossType = v;
      return this;
    }

    public Builder scaleRewards(RewardScale v) {
      this.scaleRewards = v;
      return this;
    }

    public Builder filterZeroAdvantage(boolean v) {
      this.filterZeroAdvantage = v;
      return this;
    }

    /** The symmetric clip: both {@link #clipEpsilonLow} and {@link #clipEpsilonHigh}. */
    public Builder clipEpsilon(double v) {
      this.clipEpsilonLow = v;
      this.clipEpsilonHigh = v;
      return this;
    }

    public Builder clipEpsilonLow(double v) {
      this.clipEpsilonLow = v;
      return this;
    }

    public Builder clipEpsilonHigh(double v) {
      this.clipEpsilonHigh = v;
      return this;
    }

    public Builder clipRatioC(double v) {
      this.clipRatioC = v;
      return this;
    }

    public Builder klEstimator(KlEstimator v) {
      this.klEstimator = v;
      return this;
    }

    public Builder klInReward(boolean v) {
      this.klInReward = v;
      return this;
    }

    public Builder ppoEpochs(int v) {
      this.ppoEpochs = v;
      return this;
    }

    public Builder microBatchSize(int v) {
      this.microBatchSize = v;
      return this;
    }

    public Builder lrSchedule(LrSchedule v) {
      this.lrSchedule = v;
      return this;
    }

    public Builder warmupSteps(int v) {
      this.warmupSteps = v;
      return this;
    }

    public Builder totalSteps(int v) {
      this.totalSteps = v;
      return this;
    }

    public Builder tisCap(double v) {
      this.tisCap = v;
      return this;
    }

    public Builder maxNewTokens(int v) {
      this.maxNewTokens = v;
      return this;
    }

    /** The config; an invalid value is an {@link IllegalArgumentException} naming its field. */
    public GrpoConfig build() {
      if (groupSize < 2) {
        throw new IllegalArgumentException("groupSize must be >= 2 (advantages are relative to the group), got "
            + groupSize);
      }
      if (promptsPerStep < 1) {
        throw new IllegalArgumentException("promptsPerStep must be >= 1, got " + promptsPerStep);
      }
      if ((long) promptsPerStep * groupSize > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("promptsPerStep: promptsPerStep * groupSize overflows");
      }
      finiteAtLeastZero("temperature", temperature);
      if (!(learningRate > 0) || Double.isInfinite(learningRate)) {
        throw new IllegalArgumentException("learningRate must be finite and > 0, got " + learningRate);
      }
      finiteAtLeastZero("weightDecay", weightDecay);
      finiteAtLeastZero("maxGradNorm", maxGradNorm);
      if (!(advantageEps > 0) || Double.isInfinite(advantageEps)) {
        throw new IllegalArgumentException("advantageEps must be finite and > 0, got " + advantageEps);
      }
      finiteAtLeastZero("klBeta", klBeta);
      require("lossType", lossType);
      require("scaleRewards", scaleRewards);
      require("klEstimator", klEstimator);
      require("lrSchedule", lrSchedule);
      if (!(clipEpsilonLow > 0 && clipEpsilonLow < 1)) {
        throw new IllegalArgumentException("clipEpsilonLow must be in (0, 1), got " + clipEpsilonLow);
      }
      if (!(clipEpsilonHigh > 0) || Double.isInfinite(clipEpsilonHigh)) {
        throw new IllegalArgumentException("clipEpsilonHigh must be finite and > 0, got " + clipEpsilonHigh);
      }
      if (clipEpsilonHigh < clipEpsilonLow) {
        throw new IllegalArgumentException("clipEpsilonHigh (" + clipEpsilonHigh + ") must not be below clipEpsilonLow ("
            + clipEpsilonLow + ")");
      }
      if (clipRatioC != 0 && !(clipRatioC > 1 && Double.isFinite(clipRatioC))) {
        throw new IllegalArgumentException("clipRatioC must be 0 (off) or a finite value above 1, got " + clipRatioC);
      }
      if (ppoEpochs < 1) {
        throw new IllegalArgumentException("ppoEpochs must be >= 1, got " + ppoEpochs);
      }
      if (microBatchSize < 0) {
        throw new IllegalArgumentException("microBatchSize must be >= 0 (0: the whole batch), got " + microBatchSize);
      }
      if (microBatchSize > 0 && batchSizeOf() % microBatchSize != 0) {
        throw new IllegalArgumentException("microBatchSize " + microBatchSize + " does not divide the batch of "
            + batchSizeOf() + " sequences (promptsPerStep x groupSize)");
      }
      if (totalSteps < 1) {
        throw new IllegalArgumentException("totalSteps must be >= 1, got " + totalSteps);
      }
      if (warmupSteps < 0 || warmupSteps > totalSteps) {
        throw new IllegalArgumentException("warmupSteps must be in [0, totalSteps = " + totalSteps + "], got "
            + warmupSteps);
      }
      finiteAtLeastZero("tisCap", tisCap);
      if (maxNewTokens < 1) {
        throw new IllegalArgumentException("maxNewTokens must be >= 1, got " + maxNewTokens);
      }
      return new GrpoConfig(this);
    }

    private long batchSizeOf() {
      return (long) promptsPerStep * groupSize;
    }

    private static void require(String field, Object v) {
      if (v == null) {
        throw new IllegalArgumentException(field + " must be set");
      }
    }

    private static void finiteAtLeastZero(String field, double v) {
      if (!(v >= 0) || Double.isInfinite(v)) {
        throw new IllegalArgumentException(field + " must be finite and >= 0, got " + v);
      }
    }
  }
}
