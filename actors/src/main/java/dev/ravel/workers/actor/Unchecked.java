package dev.ravel.workers.actor;

final class Unchecked {
  private Unchecked() {}

  /** Throws {@code t} as it is, checked or not. */
  @SuppressWarnings("unchecked")
  static <T extends Throwable> T sneaky(Throwable t) throws T {
    throw (T) t;
  }
}
