package dev.ravel.workers.actor;

import io.ray.api.ObjectRef;
import io.ray.api.exception.RayTaskException;

/**
 * The pending result of an actor call made through {@link RavelActorHandle}. {@link #get()} returns the
 * role method's value; an exception the method threw is rethrown as itself (not wrapped in Ray's task
 * exception), also across a chain of actors.
 */
public final class RavelRef<R> {
  private final ObjectRef<byte[]> ref;

  RavelRef(ObjectRef<byte[]> ref) {
    this.ref = ref;
  }

  /** Waits for the result. */
  public R get() {
    try {
      return decode(ref.get());
    } catch (RayTaskException e) {
      throw Unchecked.<RuntimeException>sneaky(RavelActors.unwrap(e));
    }
  }

  /** Waits at most {@code timeoutMs} (Ray's {@code RayTimeoutException} when it runs out). */
  public R get(long timeoutMs) {
    try {
      return decode(ref.get(timeoutMs));
    } catch (RayTaskException e) {
      throw Unchecked.<RuntimeException>sneaky(RavelActors.unwrap(e));
    }
  }

  /** The underlying Ray reference (for {@code Ray.wait}). */
  public ObjectRef<byte[]> rayRef() {
    return ref;
  }

  @SuppressWarnings("unchecked")
  private R decode(byte[] bytes) {
    return (R) Codec.decode(bytes);
  }
}
