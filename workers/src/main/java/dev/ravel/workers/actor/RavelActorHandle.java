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
 */
public final class RavelActorHandle<I> implements Serializable {
  private static final long serialVersionUID = 1L;

  private final ActorHandle<RavelActor> handle;
  private final Class<I> role;

  RavelActorHandle(ActorHandle<RavelActor> handle, Class<I> role) {
    this.handle = handle;
    this.role = role;
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
    return new RavelRef<>(handle.task(RavelActor::invoke, call).remote());
  }

  /** The role interface. */
  public Class<I> role() {
    return role;
  }

  /** The underlying Ray handle (to kill the actor or pass it to Ray APIs). */
  public ActorHandle<?> rayHandle() {
    return handle;
  }

  @Override
  public String toString() {
    return role.getSimpleName() + "@" + handle.getId();
  }
}
