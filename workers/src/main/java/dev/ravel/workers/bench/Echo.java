package dev.ravel.workers.bench;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;

/**
 * The role of the actor-call benchmark ({@code ravel bench-calls}): a call that does nothing but come back,
 * so its time is the cost of the call path alone.
 */
@ActorRole(name = "echo", spans = "echo")
public interface Echo extends RavelRole {
  /** Returns {@code payload} unchanged. */
  byte[] echo(byte[] payload);

  /** This actor's process id (the benchmark reads the process's CPU time). */
  long pid();
}
