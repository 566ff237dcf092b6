package dev.ravel.workers.bench;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;

/**
 * The role of the fan-out benchmark ({@code ravel bench-calls --fanout}): a call that keeps its CPU busy for a set
 * time, as a generate call does, and says how long its body ran, so the caller can set the call's whole time
 * against the body's (the hop). Implemented in Java ({@link SpinnerActor}) and in Python
 * ({@code ravel_checks.fanout.Spinner}), each beside a plain Ray twin ({@link PlainSpinner},
 * {@code ravel_checks.fanout.PlainSpinner}).
 */
@ActorRole(name = "spinner", spans = "spinner")
public interface Spinner extends RavelRole {
  /**
   * Spins on the CPU for {@code nanos} ns, then answers {@code resultChars} characters: the body's own
   * wall-clock time in ns, a colon, then padding ({@link Spin#answer}).
   *
   * @param payload the request (its size is what matters)
   * @param nanos how long to keep the CPU busy
   * @param resultChars the answer's length
   * @return the answer
   */
  String spin(String payload, long nanos, int resultChars);
}
