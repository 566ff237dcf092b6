package dev.ravel.workers.demo;

import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.actor.RavelActorHandle;
import java.util.List;
import java.util.Map;

/** {@link Relay} on Ray. */
public final class RelayActor extends RavelActor implements Relay {
  private final RavelActorHandle<Responder> responder;

  public RelayActor(Payload<RavelActorHandle<Responder>> responderPayload) {
    RavelActorHandle<Responder> responder = responderPayload.value();
    this.responder = responder;
  }

  @Override
  public String relay(String message) {
    return "relay pid " + ProcessHandle.current().pid() + " <- "
        + responder.call(Responder::respond, message).get();
  }

  @Override
  public String relayFailure(String message) {
    return responder.call(Responder::fail, message).get();
  }

  @Override
  public Map<String, String> environment(List<String> names) {
    return Environments.view(names);
  }
}
