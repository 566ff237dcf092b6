package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;

import java.util.List;

/** The one-line summary {@code ravel run} prints at the end (the record itself is {@code RunRecord}). */
public final class RunSummary {
  private RunSummary() {}

  /** The mean reward of the first and last {@code n} steps, as a one-line comparison. */
  public static String rewardTrend(List<StepRecord> steps, int n) {
    if (steps.isEmpty()) {
      return "no steps";
    }
    int k = Math.max(1, Math.min(n, steps.size() / 2));
    double first = steps.subList(0, k).stream().mapToDouble(StepRecord::rewardMean).average().orElse(0);
    double last = steps.subList(steps.size() - k, steps.size()).stream().mapToDouble(StepRecord::rewardMean).average().orElse(0);
    return String.format("reward %.3f -> %.3f (mean of first/last %d steps)", first, last, k);
  }
}
