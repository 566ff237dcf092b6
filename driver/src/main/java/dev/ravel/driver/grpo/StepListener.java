package dev.ravel.driver.grpo;

/** Told about each finished step (the command line draws its progress bar from this). */
@FunctionalInterface
public interface StepListener {
  void onStep(StepMetrics metrics, int totalSteps);

  StepListener NONE = (m, n) -> {};
}
