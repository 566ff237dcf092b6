package dev.ravel.workers.grpo;

import java.util.Objects;

/** Group-relative advantages, the GRPO replacement for a learned value baseline. */
public final class Advantages {
  private Advantages() {}

  /**
   * The outcome-supervision advantage of GRPO: each reward normalised within its group,
   * {@code A_i = (r_i - mean(r_group)) / (std(r_group) + eps)} with the population standard deviation
   * ({@link #of} with {@link RewardScale#GROUP}).
   */
  public static double[] groupRelative(double[] rewards, int groupSize, double eps) {
    return of(rewards, groupSize, RewardScale.GROUP, eps);
  }

  /**
   * Advantages {@code A_i = (r_i - mean(r_group)) / (scale + eps)}: {@code scale} is the group's population
   * standard deviation ({@link RewardScale#GROUP}), the whole batch's ({@link RewardScale#BATCH}), or absent
   * ({@link RewardScale#NONE}: {@code A_i = r_i - mean(r_group)}, no eps). Groups are consecutive runs of
   * {@code groupSize} rewards. A group whose rewards are all equal gets advantages of exactly zero (it carries no
   * signal).
   */
  public static double[] of(double[] rewards, int groupSize, RewardScale scale, double eps) {
    Objects.requireNonNull(rewards, "rewards");
    Objects.requireNonNull(scale, "scale");
    if (groupSize < 1) {
      throw new IllegalArgumentException("groupSize must be >= 1, got " + groupSize);
    }
    if (rewards.length % groupSize != 0) {
      throw new IllegalArgumentException(
          "rewards: length " + rewards.length + " is not a multiple of groupSize " + groupSize);
    }
    if (!(eps >= 0) || Double.isInfinite(eps)) {
      throw new IllegalArgumentException("eps must be finite and >= 0, got " + eps);
    }
    for (int i = 0; i < rewards.length; i++) {
      if (!Double.isFinite(rewards[i])) {
        throw new IllegalArgumentException("rewards[" + i + "] is not finite: " + rewards[i]);
      }
    }
    double batchStd = scale == RewardScale.BATCH ? std(rewards, 0, rewards.length) : 0;
    double[] a = new double[rewards.length];
    for (int start = 0; start < rewards.length; start += groupSize) {
      if (flat(rewards, start, groupSize)) {
        continue; // a[start .. start + groupSize) stay exactly zero
      }
      double mean = mean(rewards, start, start + groupSize);
      double divisor = switch (scale) {
        case GROUP -> std(rewards, start, start + groupSize) + eps;
        case BATCH -> batchStd + eps;
        case NONE -> 1;
      };
      for (int i = start; i < start + groupSize; i++) {
        a[i] = (rewards[i] - mean) / divisor;
      }
    }
    return a;
  }

  /** Whether the {@code groupSize} rewards from {@code start} are all equal (the group carries no signal). */
  public static boolean flat(double[] rewards, int start, int groupSize) {
    for (int i = start; i < start + groupSize; i++) {
      if (rewards[i] != rewards[start]) {
        return false;
      }
    }
    return true;
  }

  private static double mean(double[] x, int from, int to) {
    double m = 0;
    for (int i = from; i < to; i++) {
      m += x[i];
    }
    return m / (to - from);
  }

  /** The population standard deviation of {@code x[from..to)}. */
  private static double std(double[] x, int from, int to) {
    double mean = mean(x, from, to);
    double var = 0;
    for (int i = from; i < to; i++) {
      double d = x[i] - mean;
      var += d * d;
    }
    return Math.sqrt(var / (to - from));
  }
}
