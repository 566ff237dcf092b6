package dev.ravel.driver.cli;

/**
 * The exit codes of every {@code ravel} command, one meaning each (listed in the README): a script can tell
 * a bad command line or config from a run that failed, and a stopped job from one that timed out.
 */
final class ExitCodes {
  private ExitCodes() {}

  /** Done: the run, the job or the command succeeded. */
  static final int OK = 0;
  /** The run (or the job, or the command) failed after it started. */
  static final int FAILED = 1;
  /** A usage or configuration error, found before anything started: nothing ran. */
  static final int USAGE = 2;
  /** The job was stopped ({@code ravel submit --wait}, {@code ravel jobs logs --follow}). */
  static final int STOPPED = 3;
  /** The job was still running when {@code --timeout} passed. */
  static final int TIMED_OUT = 4;
  /**
   * {@code ravel run} was stopped by SIGINT or SIGTERM after a completed step (run.json says
   * {@code interrupted}); the process then ends as signalled processes do, 130 for SIGINT, 143 for SIGTERM.
   */
  static final int INTERRUPTED = 130;
}
