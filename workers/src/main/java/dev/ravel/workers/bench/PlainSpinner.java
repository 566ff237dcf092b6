package dev.ravel.workers.bench;

/** The same spinner as a plain Ray actor (no Ravel in the path): the fan-out benchmark's Java baseline. */
public final class PlainSpinner {
  public PlainSpinner() {}

  /** {@link Spin#answer}. */
  public String spin(String payload, long nanos, int resultChars) {
    return Spin.answer(payload, nanos, resultChars);
  }
}
