package dev.ravel.driver.grpo;

import io.ray.api.ObjectRef;
import io.ray.api.Ray;

/**
 * Where a refit puts the weights it hands every generation worker by reference: Ray's object store in a run,
 * an in-process stand-in when the loops run on in-process actors (the loops' unit tests, for many steps).
 */
@FunctionalInterface
interface ObjectStore {
  /** Ray's own object store (the driver must be connected). */
  ObjectStore RAY = Ray::put;

  /** Puts {@code value} and returns the reference the workers read it by. */
  ObjectRef<?> put(Object value);
}
