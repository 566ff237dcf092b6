package dev.ravel.workers.grpo;

import java.io.ObjectStreamException;
import java.io.Serializable;
import java.util.Objects;

/**
 * Hyper-parameters of GRPO (Shao et al. 2024, "DeepSeekMath", section 4.1): per step, {@link #promptsPerStep()}
 * prompts are each answered {@link #groupSize()} times, each completion's advantage is its reward
 * normalised within its group, and the policy maximises the clipped surrogate minus
 * {@link #klBeta()} times a KL estimate to the reference policy. Immutable; build one with
 * {@link #builder()} (an invalid value is an {@link IllegalArgumentException} naming the field).
 */
public final class GrpoConfig implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int groupSize;
  private final double clipEpsilon;
  private final double klBeta;
  private final double learningRate;
  private final double weightDecay;
  private final double maxGradNorm;
  private final double temperature;
  private final double advantageEps;
  private final long seed;
  private final int promptsPerStep;

  private GrpoConfig(Builder b) {
    this.groupSize = b.groupSize;
    this.clipEpsilon = b.clipEpsilon;
    this.klBeta = b.klBeta;
    this.learningRate = b.learningRate;
    this.weightDecay = b.weightDecay;
    this.maxGradNorm = b.maxGradNorm;
    this.temperature = b.temperature;
    this.advantageEps = b.advantageEps;
    this.seed = b.seed;
    this.promptsPerStep = b.promptsPerStep;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this config's values, to derive a changed copy. */
  public Builder toBuilder() {
    return builder().groupSize(groupSize).clipEpsilon(clipEpsilon).klBeta(klBeta).learningRate(learningRate)
        .weightDecay(weightDecay).maxGradNorm(maxGradNorm).temperature(temperature)
        .advantageEps(advantageEps).seed(seed).promptsPerStep(promptsPerStep);
  }

  /** G: completions sampled per prompt, the group advantages are relative to. Default 8. */
  public int groupSize() {
    return groupSize;
  }

  /** The PPO clip range: ratios are clipped to {@code [1 - eps, 1 + eps]}. Default 0.2. */
  public double clipEpsilon() {
    return clipEpsilon;
  }

  /** Weight of the KL penalty to the reference policy. Default 0.04. */
  public double klBeta() {
    return klBeta;
  }

  /** AdamW step size. Default 0.03 (suited to {@code ModelSpec.tiny}). */
  public double learningRate() {
    return learningRate;
  }

  /** AdamW decoupled weight decay. Default 0. */
  public double weightDecay() {
    return weightDecay;
  }

  /** The gradient is clipped to this global L2 norm before the step; 0 disables. Default 1. */
  public double maxGradNorm() {
    return maxGradNorm;
  }

  /**
   * The temperature the completions were sampled at: the loss takes log-probs at the same temperature (0 counts
   * as 1). The rest of sampling (top-p, token budget, seeds) is the generation side's {@code SamplingParams}.
   * Default 1.
   */
  public double temperature() {
    return temperature;
  }

  /** Added to the group standard deviation before dividing. Default 1e-6. */
  public double advantageEps() {
    return advantageEps;
  }

  /** Seed of the run's random choices (prompt sampling, token sampling). Default 0. */
  public long seed() {
    return seed;
  }

  /** Prompts per training step; a step trains on {@code promptsPerStep * groupSize} trajectories. Default 32. */
  public int promptsPerStep() {
    return promptsPerStep;
  }

  /** Trajectories per step: {@code promptsPerStep * groupSize}. */
  public int batchSize() {
    return promptsPerStep * groupSize;
  }

  private Object readResolve() throws ObjectStreamException {
    return toBuilder().build();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof GrpoConfig c
        && c.groupSize == groupSize
        && Double.compare(c.clipEpsilon, clipEpsilon) == 0
        && Double.compare(c.klBeta, klBeta) == 0
        && Double.compare(c.learningRate, learningRate) == 0
        && Double.compare(c.weightDecay, weightDecay) == 0
        && Double.compare(c.maxGradNorm, maxGradNorm) == 0
        && Double.compare(c.temperature, temperature) == 0
        && Double.compare(c.advantageEps, advantageEps) == 0
        && c.seed == seed
        && c.promptsPerStep == promptsPerStep;
  }

  @Override
  public int hashCode() {
    return Objects.hash(groupSize, clipEpsilon, klBeta, learningRate, weightDecay, maxGradNorm, temperature,
        advantageEps, seed, promptsPerStep);
  }

  @Override
  public String toString() {
    return "GrpoConfig{groupSize=" + groupSize + ", clipEpsilon=" + clipEpsilon + ", klBeta=" + klBeta
        + ", learningRate=" + learningRate + ", weightDecay=" + weightDecay + ", maxGradNorm=" + maxGradNorm
        + ", temperature=" + temperature
        + ", advantageEps=" + advantageEps + ", seed=" + seed + ", promptsPerStep=" + promptsPerStep + "}";
  }

  /** Collects the values of a {@link GrpoConfig}; {@link #build()} validates them. */
  public static final class Builder {
    private int groupSize = 8;
    private double clipEpsilon = 0.2;
    private double klBeta = 0.04;
    private double learningRate = 0.03;
    private double weightDecay = 0;
    private double maxGradNorm = 1.0;
    private double temperature = 1.0;
    private double advantageEps = 1e-6;
    private long seed = 0;
    private int promptsPerStep = 32;

    private Builder() {}

    public Builder groupSize(int v) {
      this.groupSize = v;
      return this;
    }

    public Builder clipEpsilon(double v) {
      this.clipEpsilon = v;
      return this;
    }

    public Builder klBeta(double v) {
      this.klBeta = v;
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

    public Builder temperature(double v) {
      this.temperature = v;
      return this;
    }

    public Builder advantageEps(double v) {
      this.advantageEps = v;
      return this;
    }

    public Builder seed(long v) {
      this.seed = v;
      return this;
    }

    public Builder promptsPerStep(int v) {
      this.promptsPerStep = v;
      return this;
    }

    /** The config; an invalid value is an {@link IllegalArgumentException} naming its field. */
    public GrpoConfig build() {
      if (groupSize < 2) {
        throw new IllegalArgumentException("groupSize must be >= 2 (advantages are relative to the group), got "
            + groupSize);
      }
      if (!(clipEpsilon > 0 && clipEpsilon < 1)) {
        throw new IllegalArgumentException("clipEpsilon must be in (0, 1), got " + clipEpsilon);
      }
      finiteAtLeastZero("klBeta", klBeta);
      if (!(learningRate > 0) || Double.isInfinite(learningRate)) {
        throw new IllegalArgumentException("learningRate must be finite and > 0, got " + learningRate);
      }
      finiteAtLeastZero("weightDecay", weightDecay);
      finiteAtLeastZero("maxGradNorm", maxGradNorm);
      finiteAtLeastZero("temperature", temperature);
      if (!(advantageEps > 0) || Double.isInfinite(advantageEps)) {
        throw new IllegalArgumentException("advantageEps must be finite and > 0, got " + advantageEps);
      }
      if (promptsPerStep < 1) {
        throw new IllegalArgumentException("promptsPerStep must be >= 1, got " + promptsPerStep);
      }
      if ((long) promptsPerStep * groupSize > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("promptsPerStep: promptsPerStep * groupSize overflows");
      }
      return new GrpoConfig(this);
    }

    private static void finiteAtLeastZero(String field, double v) {
      if (!(v >= 0) || Double.isInfinite(v)) {
        throw new IllegalArgumentException(field + " must be finite and >= 0, got " + v);
      }
    }
  }
}
