package dev.ravel.driver.grpo;

import dev.ravel.telemetry.spans.Phase;

/**
 * Told on the driver's thread just before each phase of a step begins (before its span opens), and the step
 * waits for it: a test of faults holds the run at a chosen phase of a chosen step, kills a process there, then
 * lets the step go on, so that the fault lands in that phase however fast the machine is. {@link PhaseGates}
 * does this across processes, with files.
 */
@FunctionalInterface
public interface PhaseHook {
  /** Does nothing. */
  PhaseHook NONE = (step, phase) -> { };

  /**
   * @param step the step's number, from 1 (as the progress line, {@code rl.step} and {@code steps.jsonl} say)
   * @param phase the phase about to begin (a phase run several times in a step is told each time)
   */
  void beforePhase(long step, Phase phase);
}
