package dev.ravel.driver.jobs;

/**
 * A Ray Jobs API call that did not succeed. Subclasses say why: {@link DashboardUnreachableException} (nothing
 * answers at the dashboard URL), {@link JobNotFoundException} (no such job), {@link JobsHttpException} (the
 * dashboard answered with an error status). Messages never hold runtime-environment values.
 */
public class JobsException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public JobsException(String message) {
    super(message);
  }

  public JobsException(String message, Throwable cause) {
    super(message, cause);
  }
}
