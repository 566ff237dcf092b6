package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;

/** Told about each finished step (the command line draws its progress bar from this). */
@FunctionalInterface
public interface StepListener {
  void onStep(StepRecord metrics, int totalSteps);

  StepListener NONE = (m, n) -> {};
}
