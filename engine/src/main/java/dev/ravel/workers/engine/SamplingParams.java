package dev.ravel.workers.engine;

import java.io.Serializable;
import java.util.Objects;

/**
 * How one completion is sampled: at most {@code maxTokens} tokens, at {@code temperature} (0 is greedy),
 * from the smallest set of tokens whose probability reaches {@code topP}, with randomness drawn from
 * {@code seed} so that the same request always yields the same completion. With {@code ignoreEos} (vLLM's
 * {@code ignore_eos}) a sampled EOS does not end the completion: every completion is {@code maxTokens} long,
 * which gives benchmarks the same work whatever the policy learnt. Immutable; build one with
 * {@link #builder()}.
 */
public final class SamplingParams implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int maxTokens;
  private final double temperature;
  private final double topP;
  private final long seed;
  private final boolean ignoreEos;

  private SamplingParams(Builder b) {
    this.maxTokens = b.maxTokens;
    this.temperature = b.temperature;
    this.topP = b.topP;
    this.seed = b.seed;
    this.ignoreEos = b.ignoreEos;
  }

  /** Defaults: maxTokens 16, temperature 1.0, topP 1.0, seed 0, ignoreEos false. */
  public static Builder builder() {
    return new Builder();
  }

  /** These parameters with another seed (each of a group's G samples gets its own). */
  public SamplingParams withSeed(long newSeed) {
    return toBuilder().seed(newSeed).build();
  }

  /** A builder holding these values, to derive a changed copy (a different seed, say). */
  public Builder toBuilder() {
    return new Builder().maxTokens(maxTokens).temperature(temperature).topP(topP).seed(seed).ignoreEos(ignoreEos);
  }

  /** Most tokens to generate (at least 1). */
  public int maxTokens() {
    return maxTokens;
  }

  /** Softmax temperature; 0 picks the most likely token. */
  public double temperature() {
    return temperature;
  }

  /** Nucleus mass in (0, 1]; 1 samples from the whole vocabulary. */
  public double topP() {
    return topP;
  }

  /** Seed of the request's random stream. */
  public long seed() {
    return seed;
  }

  /** Whether a sampled EOS is kept as a token and generation goes on to {@link #maxTokens()}. */
  public boolean ignoreEos() {
    return ignoreEos;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SamplingParams p && maxTokens == p.maxTokens
        && Double.compare(temperature, p.temperature) == 0 && Double.compare(topP, p.topP) == 0 && seed == p.seed
        && ignoreEos == p.ignoreEos;
  }

  @Override
  public int hashCode() {
    return Objects.hash(maxTokens, temperature, topP, seed, ignoreEos);
  }

  @Override
  public String toString() {
    return "SamplingParams{maxTokens=" + maxTokens + ", temperature=" + temperature + ", topP=" + topP
        + ", seed=" + seed + (ignoreEos ? ", ignoreEos=true" : "") + "}";
  }

  /** Builds {@link SamplingParams}; {@link #build()} rejects invalid values naming the field. */
  public static final class Builder {
    private int maxTokens = 16;
    private double temperature = 1.0;
    private double topP = 1.0;
    private long seed;
    private boolean ignoreEos;

    private Builder() {}

    public Builder maxTokens(int maxTokens) {
      this.maxTokens = maxTokens;
      return this;
    }

    public Builder temperature(double temperature) {
      this.temperature = temperature;
      return this;
    }

    public Builder topP(double topP) {
      this.topP = topP;
      return this;
    }

    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** Keep generating past a sampled EOS, to {@code maxTokens} (default false). */
    public Builder ignoreEos(boolean ignoreEos) {
      this.ignoreEos = ignoreEos;
      return this;
    }

    /** @throws IllegalArgumentException naming the first invalid field */
    public SamplingParams build() {
      if (maxTokens < 1) {
        throw new IllegalArgumentException("maxTokens: must be at least 1 (got " + maxTokens + ")");
      }
      if (!(temperature >= 0) || Double.isInfinite(temperature)) {
        throw new IllegalArgumentException("temperature: must be a finite number >= 0 (got " + temperature + ")");
      }
      if (!(topP > 0 && topP <= 1)) {
        throw new IllegalArgumentException("topP: must be in (0, 1] (got " + topP + ")");
      }
      return new SamplingParams(this);
    }
  }
}
