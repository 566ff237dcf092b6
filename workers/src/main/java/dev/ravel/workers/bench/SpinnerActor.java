package dev.ravel.workers.bench;

import dev.ravel.workers.actor.RavelActor;

/** {@link Spinner} on Ray through Ravel's call path (context carried, the call in an {@code rl.spinner.spin} span). */
public final class SpinnerActor extends RavelActor implements Spinner {
  public SpinnerActor() {}

  @Override
  public String spin(String payload, long nanos, int resultChars) {
    return Spin.answer(payload, nanos, resultChars);
  }
}
