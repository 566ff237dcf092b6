package dev.ravel.workers.demo;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import java.util.List;
import java.util.Map;

/** The second actor of the demo pair. */
@ActorRole(name = "responder", spans = "responder")
public interface Responder extends RavelRole {
  /**
   * Answers {@code message}. Inside, an engine-style component emits one {@code llm_request} span the way
   * a third-party engine would: only if {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} is set in this
   * process's environment, to that endpoint.
   */
  String respond(String message);

  /** Always throws {@link IllegalStateException} with {@code message}. */
  String fail(String message);

  /** The values this actor's process sees for {@code names} ("<unset>" when absent). */
  Map<String, String> environment(List<String> names);
}
