package dev.ravel.driver.jobs;

import java.net.URI;

/** The dashboard knows no job (submission id or job id) by this id; names the id. */
public final class JobNotFoundException extends JobsException {
  private static final long serialVersionUID = 1L;
  private final String id;

  public JobNotFoundException(String id, URI dashboard) {
    super("no Ray job '" + id + "' at " + dashboard + " (neither a submission id nor a job id)");
    this.id = id;
  }

  /** The id that was looked up. */
  public String id() {
    return id;
  }
}
