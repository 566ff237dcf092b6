package dev.ravel.workers.actor;

import dev.ravel.telemetry.context.TraceCarrier;
import io.ray.api.ActorHandle;
import java.io.Serializable;

/**
 * A typed handle on an actor of role {@code I}: the calling side of the one propagation mechanism. Every
 * {@code call} captures the caller's current trace context into the invocation that travels with it, so
 * the actor's span becomes a child of the caller's. Handles can be passed to other actors.
 *
 * <pre>{@code
 * RavelActorHandle<Greeter> g = RavelActors.actor(GreeterActor::new, Greeter.class).env(env).remote();
 * String hi = g.call(Greeter::greet, "bob").get();
 * }</pre>
 *
 * <p>{@link #local} makes a handle on an actor in this process, whose calls take the same path (context
 * captured, arguments encoded, the role method run in its {@code rl.<role>.<method>} span, the result
 * decoded) without Ray: for tests and single-process tools.
 */
public final class RavelActorHandle<I> implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Null for an in-process handle. */
  private final ActorHandle<RavelActor> handle;
  /** Null for a Ray handle. */
  private final String localId;
  private final Class<I> role;

  RavelActorHandle(ActorHandle<RavelActor> handle, Class<I> role) {
    this(handle, null, role);
  }

  private RavelActorHandle(ActorHandle<RavelActor> handle, String localId, Class<I> role) {
    this.handle = handle;
    this.localId = localId;
    this.role = role;
  }

  /**
   * A handle on {@code actor}, running in this process, that serves at most {@code maxConcurrency} calls at
   * once. It can be passed to other in-process actors (also inside a {@link Payload}) but not to another
   * process. {@link #release()} stops it.
   *
   * @throws IllegalArgumentException when {@code actor} does not implement {@code role}
   */
  public static <I> RavelActorHandle<I> local(RavelActor actor, Class<I> role, int maxConcurrency) {
    if (!role.isInstance(actor)) {
      throw new IllegalArgumentException(actor.getClass().getName() + " does not implement " + role.getName());
    }
    return new RavelActorHandle<>(null, LocalActors.register(actor, maxConcurrency), role);
  }

  /** Whether this handle's actor runs in this process ({@link #local}). */
  public boolean isLocal() {
    return localId != null;
  }

  /** Stops an in-process actor's call threads (calls after this fail); nothing for a Ray handle. */
  public void release() {
    if (localId != null) {
      LocalActors.release(localId);
    }
  }

  public <R> RavelRef<R> call(RemoteMethod.M0<I, R> method) {
    return send(method);
  }

  public <A, R> RavelRef<R> call(RemoteMethod.M1<I, A, R> method, A a) {
    return send(method, a);
  }

  public <A, B, R> RavelRef<R> call(RemoteMethod.M2<I, A, B, R> method, A a, B b) {
    return send(method, a, b);
  }

  public <A, B, C, R> RavelRef<R> call(RemoteMethod.M3<I, A, B, C, R> method, A a, B b, C c) {
    return send(method, a, b, c);
  }

  public <A, B, C, D, R> RavelRef<R> call(RemoteMethod.M4<I, A, B, C, D, R> method, A a, B b, C c, D d) {
    return send(method, a, b, c, d);
  }

  private <R> RavelRef<R> send(Serializable methodRef, Object... args) {
    RoleMethod m = RoleMethod.of(methodRef);
    ActorInvocation call = new ActorInvocation(TraceCarrier.current(), m.name(), m.descriptor(), args);
    if (localId != null) {
      return new RavelRef<>(LocalActors.invoke(localId, call));
    }
    return new RavelRef<>(handle.task(RavelActor::invoke, call).remote());
  }

  /** The role interface. */
  public Class<I> role() {
    return role;
  }

  /**
   * The underlying Ray handle (to kill the actor or pass it to Ray APIs).
   *
   * @throws IllegalStateException for an in-process handle
   */
  public ActorHandle<?> rayHandle() {
    if (handle == null) {
      throw new IllegalStateException("in-process actor " + localId + " has no Ray handle");
    }
    return handle;
  }

  @Override
  public String toString() {
    return role.getSimpleName() + "@" + (handle == null ? localId : handle.getId());
  }
}
