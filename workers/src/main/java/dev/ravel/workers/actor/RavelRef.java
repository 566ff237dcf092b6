package dev.ravel.workers.actor;

import io.ray.api.ObjectRef;
import io.ray.api.exception.RayTaskException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The pending result of an actor call made through {@link RavelActorHandle}. {@link #get()} returns the
 * role method's value; an exception the method threw is rethrown as itself (not wrapped in Ray's task
 * exception), also across a chain of actors.
 */
public final class RavelRef<R> {
  /** Null for an in-process call. */
  private final ObjectRef<byte[]> ref;
  /** Null for a Ray call. */
  private final CompletableFuture<byte[]> local;

  RavelRef(ObjectRef<byte[]> ref) {
    this.ref = ref;
    this.local = null;
  }

  RavelRef(CompletableFuture<byte[]> local) {
    this.ref = null;
    this.local = local;
  }

  /** Waits for the result. */
  public R get() {
    if (local != null) {
      return awaitLocal(Long.MAX_VALUE);
    }
    try {
      return decode(ref.get());
    } catch (RayTaskException e) {
      throw Unchecked.<RuntimeException>sneaky(RavelActors.unwrap(e));
    }
  }

  /** Waits at most {@code timeoutMs} (Ray's {@code RayTimeoutException} when it runs out). */
  public R get(long timeoutMs) {
    if (local != null) {
      return awaitLocal(timeoutMs);
    }
    try {
      return decode(ref.get(timeoutMs));
    } catch (RayTaskException e) {
      throw Unchecked.<RuntimeException>sneaky(RavelActors.unwrap(e));
    }
  }

  /**
   * The underlying Ray reference (for {@code Ray.wait}).
   *
   * @throws IllegalStateException for a call to an in-process actor
   */
  public ObjectRef<byte[]> rayRef() {
    if (ref == null) {
      throw new IllegalStateException("a call to an in-process actor has no Ray reference");
    }
    return ref;
  }

  private R awaitLocal(long timeoutMs) {
    try {
      return decode(timeoutMs == Long.MAX_VALUE ? local.get() : local.get(timeoutMs, TimeUnit.MILLISECONDS));
    } catch (ExecutionException e) {
      throw Unchecked.<RuntimeException>sneaky(e.getCause());
    } catch (TimeoutException e) {
      throw new IllegalStateException("no result within " + timeoutMs + " ms", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for an in-process actor call", e);
    }
  }

  @SuppressWarnings("unchecked")
  private R decode(byte[] bytes) {
    return (R) Codec.decode(bytes);
  }
}
