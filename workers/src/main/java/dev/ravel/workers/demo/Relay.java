package dev.ravel.workers.demo;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import java.util.List;
import java.util.Map;

/** The first actor of the demo pair: it forwards each message to a {@link Responder}. */
@ActorRole(name = "relay", spans = "relay")
public interface Relay extends RavelRole {
  /** Forwards {@code message} to the responder and returns its answer, prefixed with this process's pid. */
  String relay(String message);

  /** Asks the responder to fail; the responder's exception comes back to the caller as itself. */
  String relayFailure(String message);

  /** The values this actor's process sees for {@code names} ("<unset>" when absent). */
  Map<String, String> environment(List<String> names);
}
