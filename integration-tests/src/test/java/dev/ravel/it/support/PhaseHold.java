package dev.ravel.it.support;

import dev.ravel.driver.grpo.PhaseGates;
import dev.ravel.telemetry.spans.Phase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Holds a {@code bin/ravel run} at a chosen phase of a chosen step ({@link PhaseGates}, through
 * {@value PhaseGates#ENV}), so a test of faults kills a process there and then lets the step go on: the fault
 * lands in that phase however fast or loaded the machine is.
 */
public final class PhaseHold {
  private final Path dir;
  private final long step;
  private final Phase phase;

  private PhaseHold(Path dir, long step, Phase phase) {
    this.dir = dir;
    this.step = step;
    this.phase = phase;
  }

  /** A hold of step {@code step}'s (from 1) {@code phase}, its gate files in {@code dir} (created). */
  public static PhaseHold arm(Path dir, long step, Phase phase) throws IOException {
    Files.createDirectories(dir);
    Files.deleteIfExists(PhaseGates.entered(dir, step, phase));
    Files.writeString(PhaseGates.hold(dir, step, phase), "held by a test\n", StandardCharsets.UTF_8);
    return new PhaseHold(dir, step, phase);
  }

  /** The variable that gives the driver this hold's folder ({@value PhaseGates#ENV}). */
  public java.util.Map<String, String> env() {
    return java.util.Map.of(PhaseGates.ENV, dir.toString());
  }

  /** The command prefix that gives the driver this hold's folder: {@code env RAVEL_TESTING_PHASE_GATES=DIR}. */
  public List<String> envPrefix() {
    return List.of("env", PhaseGates.ENV + "=" + dir);
  }

  /**
   * Waits until the driver holds at the phase (at most {@code boundS} s), failing at once if {@code driver} ends
   * first (its output in {@code out}).
   */
  public void awaitHeld(Process driver, Path out, long boundS) throws Exception {
    if (!await(driver::isAlive, boundS)) {
      throw new AssertionError("the run ended before step " + step + "'s " + phase.label() + " phase:\n"
          + Files.readString(out, StandardCharsets.UTF_8));
    }
  }

  /**
   * Waits until the driver holds at the phase (at most {@code boundS} s), for a driver the test does not hold the
   * process of (a {@link RavelCommand#run} on another thread).
   */
  public void awaitHeld(long boundS) throws InterruptedException {
    await(() -> true, boundS);
  }

  /**
   * Waits (at most {@code boundS} s, then fails) until the driver holds at the phase; false when {@code alive} says
   * the driver ended first.
   */
  private boolean await(java.util.function.BooleanSupplier alive, long boundS) throws InterruptedException {
    Path entered = PhaseGates.entered(dir, step, phase);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(boundS);
    while (!Files.exists(entered)) {
      if (!alive.getAsBoolean()) {
        return false;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("the run did not reach step " + step + "'s " + phase.label() + " phase within "
            + boundS + " s");
      }
      Thread.sleep(50);
    }
    return true;
  }

  /** Lets the held phase begin. */
  public void release() throws IOException {
    Files.deleteIfExists(PhaseGates.hold(dir, step, phase));
  }
}
