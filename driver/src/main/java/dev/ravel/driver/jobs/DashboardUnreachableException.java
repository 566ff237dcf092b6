package dev.ravel.driver.jobs;

import java.net.URI;

/** Nothing answered at the Ray dashboard's URL (connection refused, timed out or reset); names the URL. */
public final class DashboardUnreachableException extends JobsException {
  private static final long serialVersionUID = 1L;
  private final URI url;

  public DashboardUnreachableException(URI url, Throwable cause) {
    super("Ray dashboard at " + url + " is unreachable (" + reason(cause) + "); is a Ray head with the dashboard"
        + " running there? (pass --address, e.g. http://127.0.0.1:8265)", cause);
    this.url = url;
  }

  /** The dashboard URL that did not answer. */
  public URI url() {
    return url;
  }

  private static String reason(Throwable cause) {
    if (cause == null) {
      return "no answer";
    }
    String m = cause.getMessage();
    String type = cause.getClass().getSimpleName();
    return m == null || m.isBlank() ? type : type + ": " + m;
  }
}
