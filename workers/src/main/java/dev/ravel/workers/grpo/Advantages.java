package dev.ravel.workers.grpo;

import java.util.Objects;

/** Group-relative advantages, the GRPO replacement for a learned value baseline. */
public final class Advantages {
  private Advantages() {}

  /**
   * The outcome-supervision advantage of GRPO: each reward normalised within its group,
   * {@code A_i = (r_i - mean(r_group)) / (std(r_group) + eps)} with the population standard deviation.
   * Groups are consecutive runs of {@code groupSize} rewards. A group whose rewards are all equal gets
   * advantages of exactly zero (it carries no signal).
   */
  public static double[] groupRelative(double[] rewards, int groupSize, double eps) {
    Objects.requireNonNull(rewards, "rewards");
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
    double[] a = new double[rewards.length];
    for (int start = 0; start < rewards.length; start += groupSize) {
      double mean = 0;
      boolean allEqual = true;
      for (int i = start; i < start + groupSize; i++) {
        mean += rewards[i];
        allEqual &= rewards[i] == rewards[start];
      }
      if (allEqual) {
        continue; // a[start .. start + groupSize) stay exactly zero
      }
      mean /= groupSize;
      double var = 0;
      for (int i = start; i < start + groupSize; i++) {
        double d = rewards[i] - mean;
        var += d * d;
      }
      double std = Math.sqrt(var / groupSize);
      for (int i = start; i < start + groupSize; i++) {
        double d = rewards[i] - mean;
        a[i] = d / (std + eps);
      }
    }
    return a;
  }
}
