package dev.ravel.examples.app;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import java.util.List;
import java.util.Map;

/** The Python actor ({@code app_shouter.Shouter}): its methods in camel case. */
@ActorRole(name = "shouter", spans = "shouter")
public interface Shouter extends RavelRole {
  /** Each word in capitals, echoed by the Java actor named {@link PipelineApp#ECHO_NAME}. */
  Words shout(Words words);

  /** The values of the environment variables {@code names} in the actor's process (absent ones left out). */
  Map<String, String> environment(List<String> names);
}
