package dev.ravel.examples.app;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;

/** The Java actor the Python actor calls back. */
@ActorRole(name = "echo", spans = "echo")
public interface Echo extends RavelRole {
  /**
   * {@code word} with an exclamation mark.
   *
   * @throws IllegalArgumentException for the word {@code BOOM}
   */
  String echo(String word);
}
