package dev.ravel.driver.grpo;

import dev.ravel.telemetry.spans.Phase;
import dev.ravel.telemetry.spans.Spans;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * One step's phases: each runs in its {@link Phase}'s span (when its group is on) and its wall time is
 * measured either way, under the phase's {@link Phase#progressLabel() progress label}.
 */
final class PhaseClock {
  private final Spans spans;
  private final PhaseHook hook;
  /** The step's number, from 1. */
  private final long step;
  private final Map<String, Double> seconds = new LinkedHashMap<>();
  private final long start = System.nanoTime();

  /** A clock whose phases are not told to a hook (tests of the loops). */
  PhaseClock(Spans spans) {
    this(spans, PhaseHook.NONE, 0);
  }

  /** A clock of step number {@code step} that tells {@code hook} before each phase begins. */
  PhaseClock(Spans spans, PhaseHook hook, long step) {
    this.spans = spans;
    this.hook = hook;
    this.step = step;
  }

  /**
   * Runs {@code body} as {@code phase}: told to the hook first, then in its span (an exception recorded there
   * and rethrown), timed.
   */
  <T> T time(Phase phase, Supplier<T> body) {
    hook.beforePhase(step, phase);
    long t0 = System.nanoTime();
    try {
      return spans.call(phase, s -> body.get());
    } finally {
      seconds.merge(phase.progressLabel(), (System.nanoTime() - t0) / 1e9, Double::sum);
    }
  }

  /** Wall seconds spent in phases with this progress label so far. */
  double seconds(String progressLabel) {
    return seconds.getOrDefault(progressLabel, 0.0);
  }

  /** Wall seconds since the step began. */
  double elapsed() {
    return (System.nanoTime() - start) / 1e9;
  }

  /** Wall seconds per progress label. */
  Map<String, Double> phases() {
    return Map.copyOf(seconds);
  }
}
