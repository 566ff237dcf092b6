package dev.ravel.telemetry.traces;

/** A trace source (files, a backend) that cannot give a run's spans; the message is one line for a user. */
public final class TraceSourceException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public TraceSourceException(String message) {
    super(message);
  }
}
