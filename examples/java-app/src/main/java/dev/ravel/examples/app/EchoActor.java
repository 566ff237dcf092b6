package dev.ravel.examples.app;

import dev.ravel.workers.actor.RavelActor;

/** {@link Echo} on Ray. */
public final class EchoActor extends RavelActor implements Echo {
  /** Made by Ray in the actor's process. */
  public EchoActor() {}

  @Override
  public String echo(String word) {
    if (word.equals("BOOM")) {
      throw new IllegalArgumentException("echo refuses " + word);
    }
    return word + "!";
  }
}
