package dev.ravel.driver.grpo;

import java.util.Map;

/**
 * What one GRPO step measured.
 *
 * @param rewardStd the population standard deviation of the step's rewards
 * @param phases wall seconds per phase, in the order they ran ({@code generation}, {@code training}, ...)
 * @param rayCalls actor calls issued for this step (by the driver, and in async mode by the collector)
 * @param droppedForAge trajectories discarded as too old while gathering this step's batch (async)
 * @param traceId the step's trace
 */
public record StepMetrics(int step, String mode, double rewardMean, double rewardStd, double kl, double loss, double clipFraction,
    long tokens, double tokensPerSecond, double stepSeconds, Map<String, Double> phases, long weightVersion,
    int trajectories, int droppedForAge, long rayCalls, String traceId) {
  public StepMetrics {
    phases = Map.copyOf(phases);
  }
}
