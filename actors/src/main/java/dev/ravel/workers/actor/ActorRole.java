package dev.ravel.workers.actor;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Names an actor role interface. Every call an actor of this role serves runs in a span named
 * {@code rl.<spans>.<method in snake_case>} (for example {@code rl.worker.generate}), and the actor's
 * process reports {@code rl.process.role = name}.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface ActorRole {
  /** {@return the process role, e.g. {@code generation_worker}} */
  String name();

  /** {@return the middle part of the span names of the calls this role serves, e.g. {@code worker}} */
  String spans();
}
