package dev.ravel.driver.cli;

import java.util.Arrays;
import java.util.List;

/**
 * The statistics {@code ravel bench} reports: medians, and ratios of two variants paired round by round (the
 * runs of one round ran back to back, so they share the machine's load) with a 95% interval from the spread
 * of the per-round ratios (Student's t, n - 1 degrees of freedom).
 */
final class BenchStats {
  /** Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom. */
  private static final double[] T975 = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060,
      2.056, 2.052, 2.048, 2.045, 2.042};

  private BenchStats() {}

  /** A paired ratio: the mean of the per-round ratios and its 95% interval (null bounds with one round). */
  record Ratio(double value, Double low, Double high, List<Double> perRound) {
    /** {@code " (95% interval lo-hi)"}, or nothing with one round. */
    String intervalText() {
      return low == null ? "" : String.format(" (95%% interval %.3f-%.3f)", low, high);
    }

    /** The JSON shape the bench commands write: {@code value}, {@code ci95} and {@code per_round}. */
    java.util.Map<String, Object> json() {
      java.util.Map<String, Object> o = new java.util.LinkedHashMap<>();
      o.put("value", value);
      o.put("ci95", Arrays.asList(low, high));
      o.put("per_round", perRound);
      return o;
    }
  }

  static double median(List<Double> xs) {
    if (xs.isEmpty()) {
      return Double.NaN;
    }
    double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    int n = a.length;
    return n % 2 == 1 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
  }

  /** {@code a[i] / b[i]} per round, their mean and a t-interval around it. */
  static Ratio ratio(List<Double> a, List<Double> b) {
    if (a.size() != b.size() || a.isEmpty()) {
      throw new IllegalArgumentException("paired rounds needed: " + a.size() + " and " + b.size());
    }
    double[] r = new double[a.size()];
    for (int i = 0; i < r.length; i++) {
      r[i] = a.get(i) / b.get(i);
    }
    double mean = Arrays.stream(r).average().orElseThrow();
    List<Double> perRound = Arrays.stream(r).boxed().toList();
    if (r.length < 2) {
      return new Ratio(mean, null, null, perRound);
    }
    double var = Arrays.stream(r).map(x -> (x - mean) * (x - mean)).sum() / (r.length - 1);
    double t = r.length - 1 <= T975.length ? T975[r.length - 2] : 1.96;
    double half = t * Math.sqrt(var / r.length);
    return new Ratio(mean, mean - half, mean + half, perRound);
  }

  /**
   * The median of {@code xs} with a distribution-free 95% interval from the order statistics (the ranks
   * {@code n/2 -+ 0.98 sqrt(n)}, rounded outwards); the values themselves as {@code per_round}. NaN and no interval
   * when {@code xs} is empty; no interval under 3 values.
   */
  static Ratio medianOf(List<Double> xs) {
    double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    int n = a.length;
    if (n < 3) {
      return new Ratio(median(xs), null, null, xs);
    }
    double half = 0.98 * Math.sqrt(n);
    int lo = Math.max(0, (int) Math.floor(n / 2.0 - half) - 1);
    int hi = Math.min(n - 1, (int) Math.ceil(n / 2.0 + half));
    return new Ratio(median(xs), a[lo], a[hi], xs);
  }
}
