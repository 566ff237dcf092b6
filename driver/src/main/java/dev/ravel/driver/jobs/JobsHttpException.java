package dev.ravel.driver.jobs;

/**
 * The dashboard answered a Jobs API call with an error status. {@link #serverMessage()} is the server's own
 * explanation, reduced to its last exception line when the server sent a Python traceback;
 * {@link #responseBody()} is the whole body.
 */
public final class JobsHttpException extends JobsException {
  private static final long serialVersionUID = 1L;
  private final int statusCode;
  private final String serverMessage;
  private final String responseBody;

  public JobsHttpException(String operation, int statusCode, String serverMessage, String responseBody) {
    super(operation + " failed: HTTP " + statusCode + (serverMessage.isEmpty() ? "" : ": " + serverMessage));
    this.statusCode = statusCode;
    this.serverMessage = serverMessage;
    this.responseBody = responseBody;
  }

  public int statusCode() {
    return statusCode;
  }

  /** The server's explanation (one line), possibly empty. */
  public String serverMessage() {
    return serverMessage;
  }

  /** The whole response body. */
  public String responseBody() {
    return responseBody;
  }
}
