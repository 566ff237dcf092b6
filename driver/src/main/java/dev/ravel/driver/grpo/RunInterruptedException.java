package dev.ravel.driver.grpo;

/**
 * A run stopped between steps because it was asked to ({@link GrpoRun#requestStop}, on SIGINT or SIGTERM):
 * the steps before it are complete, their spans and checkpoints written.
 */
public final class RunInterruptedException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int completedSteps;

  RunInterruptedException(int completedSteps) {
    super("the run was interrupted after step " + completedSteps);
    this.completedSteps = completedSteps;
  }

  /** Steps completed before the stop. */
  public int completedSteps() {
    return completedSteps;
  }
}
