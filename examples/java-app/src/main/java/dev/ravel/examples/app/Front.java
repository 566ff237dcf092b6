package dev.ravel.examples.app;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;

/** The Java actor the driver calls: it hands the words to the Python shouter. */
@ActorRole(name = "front", spans = "front")
public interface Front extends RavelRole {
  /** The words, shouted by the Python actor and echoed by the Java one. */
  Words relay(Words words);
}
