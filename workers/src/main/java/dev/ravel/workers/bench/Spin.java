package dev.ravel.workers.bench;

/** The body both Java spinners run, and the form of their answer. */
public final class Spin {
  private Spin() {}

  /**
   * Spins for {@code nanos} ns (reading the clock, nothing else) and answers the body's wall-clock ns, a colon and
   * padding to {@code resultChars} characters.
   *
   * @param payload the request (unread: its size is what the call carries)
   * @param nanos how long to spin
   * @param resultChars the answer's length (at least the digits and the colon)
   * @return the answer
   */
  public static String answer(String payload, long nanos, int resultChars) {
    long t0 = System.nanoTime();
    long now = t0;
    while (now - t0 < nanos) {
      now = System.nanoTime();
    }
    String head = (System.nanoTime() - t0) + ":";
    StringBuilder b = new StringBuilder(Math.max(resultChars, head.length())).append(head);
    while (b.length() < resultChars) {
      b.append('x');
    }
    return b.toString();
  }

  /**
   * The body's wall-clock ns from an answer of {@link #answer} (or of the Python spinners, which answer the same
   * form).
   *
   * @param answer the answer
   * @return the ns before its colon
   * @throws IllegalArgumentException when the answer has no such number
   */
  public static long bodyNanos(String answer) {
    int colon = answer == null ? -1 : answer.indexOf(':');
    if (colon < 1) {
      throw new IllegalArgumentException("not a spinner's answer: "
          + (answer == null ? "null" : answer.substring(0, Math.min(40, answer.length()))));
    }
    return Long.parseLong(answer.substring(0, colon));
  }
}
