package dev.ravel.driver.grpo;

import dev.ravel.telemetry.spans.Phase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Phase gates in a folder, for tests of faults that run {@code bin/ravel} as a process of its own: with
 * {@value #ENV} set to a folder, the driver creates {@code step-N.LABEL.entered} there as step {@code N}'s phase
 * {@code LABEL} ({@link Phase#label()}: {@code refit}, {@code gen}, {@code logprobs}, {@code train}, ...) is about
 * to begin, and while {@code step-N.LABEL.hold} exists it waits (at most {@link #HOLD_BOUND_S} s) before it
 * begins. A test creates the hold file, waits for the entered one, kills what it means to kill, and deletes the
 * hold file: the fault is in that phase, whatever the machine's speed. Unset (always, outside tests), nothing
 * is written and nothing waits.
 */
public final class PhaseGates implements PhaseHook {
  /** The folder of the gates; a variable of the driver's environment only, never passed to a worker. */
  public static final String ENV = "RAVEL_TESTING_PHASE_GATES";
  /** How long a held phase waits for its hold file to go before the step fails naming it. */
  public static final long HOLD_BOUND_S = 1800;
  private static final long POLL_MS = 20;

  private final Path dir;

  private PhaseGates(Path dir) {
    this.dir = dir;
  }

  /**
   * The gates {@code env} asks for, or {@link PhaseHook#NONE} when {@value #ENV} is unset or empty.
   *
   * @throws IllegalArgumentException naming the variable when its folder does not exist
   */
  public static PhaseHook fromEnvironment(Map<String, String> env) {
    String value = env.getOrDefault(ENV, "");
    if (value.isEmpty()) {
      return PhaseHook.NONE;
    }
    Path dir = Path.of(value);
    if (!Files.isDirectory(dir)) {
      throw new IllegalArgumentException(ENV + "=" + value + ": not a folder (the phase gates of a test of faults)");
    }
    return new PhaseGates(dir);
  }

  /** The file the driver creates in {@code dir} as step {@code step}'s {@code phase} is about to begin. */
  public static Path entered(Path dir, long step, Phase phase) {
    return dir.resolve("step-" + step + "." + phase.label() + ".entered");
  }

  /** The file that, while it exists in {@code dir}, holds step {@code step}'s {@code phase} before it begins. */
  public static Path hold(Path dir, long step, Phase phase) {
    return dir.resolve("step-" + step + "." + phase.label() + ".hold");
  }

  @Override
  public void beforePhase(long step, Phase phase) {
    Path entered = entered(dir, step, phase);
    try {
      Files.writeString(entered, ProcessHandle.current().pid() + "\n", StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(ENV + ": cannot write " + entered, e);
    }
    Path hold = hold(dir, step, phase);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HOLD_BOUND_S);
    while (Files.exists(hold)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(ENV + ": " + hold + " was not removed within " + HOLD_BOUND_S + " s");
      }
      try {
        Thread.sleep(POLL_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while held at " + hold, e);
      }
    }
  }
}
