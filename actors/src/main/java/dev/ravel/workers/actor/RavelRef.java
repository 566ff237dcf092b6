package dev.ravel.workers.actor;

import io.ray.api.ObjectRef;
import io.ray.api.exception.CrossLanguageException;
import io.ray.api.exception.RayTaskException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * The pending result of an actor call made through {@link RavelActorHandle}. {@link #get()} returns the
 * role method's value; an exception the method threw is rethrown as itself (not wrapped in Ray's task
 * exception), also across a chain of actors.
 *
 * @param <R> the role method's result type
 */
public final class RavelRef<R> {
  /** Null for an in-process call. */
  private final ObjectRef<byte[]> ref;
  /** Null for a Ray call. */
  private final CompletableFuture<byte[]> local;
  /** Reads the result's bytes: Java serialization, or JSON from a Python actor. */
  private final Function<byte[], R> decoder;
  /** The Python call ({@code Class.method}), null for a Java actor. */
  private final String pythonCall;

  RavelRef(ObjectRef<byte[]> ref) {
    this(ref, null, RavelRef::javaDecode, null);
  }

  RavelRef(CompletableFuture<byte[]> local) {
    this(null, local, RavelRef::javaDecode, null);
  }

  RavelRef(ObjectRef<byte[]> ref, Function<byte[], R> decoder, String pythonCall) {
    this(ref, null, decoder, pythonCall);
  }

  private RavelRef(ObjectRef<byte[]> ref, CompletableFuture<byte[]> local, Function<byte[], R> decoder,
      String pythonCall) {
    this.ref = ref;
    this.local = local;
    this.decoder = decoder;
    this.pythonCall = pythonCall;
  }

  /**
   * Waits for the result.
   *
   * @return the role method's value
   * @throws PythonWorkerException when a Python actor's method raised an exception
   */
  public R get() {
    if (local != null) {
      return awaitLocal(Long.MAX_VALUE);
    }
    try {
      return decoder.apply(ref.get());
    } catch (RayTaskException e) {
      throw Unchecked.<RuntimeException>sneaky(RavelActors.unwrap(e));
    } catch (CrossLanguageException e) {
      throw PythonWorkerException.of(pythonCall, e);
    }
  }

  /**
   * Waits at most {@code timeoutMs} for the result (Ray's {@code RayTimeoutException} when it runs out).
   *
   * @param timeoutMs the longest wait, in milliseconds
   * @return the role method's value
   * @throws IllegalStateException when an in-process call has no result in time, or the wait is interrupted
   * @throws PythonWorkerException when a Python actor's method raised an exception
   */
  public R get(long timeoutMs) {
    if (local != null) {
      return awaitLocal(timeoutMs);
    }
    try {
      return decoder.apply(ref.get(timeoutMs));
    } catch (RayTaskException e) {
      throw Unchecked.<RuntimeException>sneaky(RavelActors.unwrap(e));
    } catch (CrossLanguageException e) {
      throw PythonWorkerException.of(pythonCall, e);
    }
  }

  /**
   * Waits for every result of a batch of calls, in the order of {@code refs}: the calls run meanwhile (they were
   * sent when made), so the batch takes as long as its slowest call.
   *
   * @param <R> the role method's result type
   * @param refs the pending results
   * @return the values, in the order of {@code refs}
   * @throws PythonWorkerException when a Python actor's method raised an exception (the first in order)
   */
  public static <R> List<R> getAll(List<RavelRef<R>> refs) {
    List<R> out = new ArrayList<>(refs.size());
    for (RavelRef<R> r : refs) {
      out.add(r.get());
    }
    return out;
  }

  /**
   * As {@link #getAll(List)}, all of them within one deadline of {@code timeoutMs} from now.
   *
   * @param <R> the role method's result type
   * @param refs the pending results
   * @param timeoutMs the longest wait for all of them, in milliseconds
   * @return the values, in the order of {@code refs}
   * @throws IllegalStateException when an in-process call has no result in time
   * @throws PythonWorkerException when a Python actor's method raised an exception (the first in order)
   */
  public static <R> List<R> getAll(List<RavelRef<R>> refs, long timeoutMs) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    List<R> out = new ArrayList<>(refs.size());
    for (RavelRef<R> r : refs) {
      out.add(r.get(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()))));
    }
    return out;
  }

  /**
   * The underlying Ray reference (for {@code Ray.wait}).
   *
   * @return the Ray reference to the call's encoded result
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
      return decoder.apply(timeoutMs == Long.MAX_VALUE ? local.get() : local.get(timeoutMs, TimeUnit.MILLISECONDS));
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
  private static <R> R javaDecode(byte[] bytes) {
    return (R) Codec.decode(bytes);
  }
}
