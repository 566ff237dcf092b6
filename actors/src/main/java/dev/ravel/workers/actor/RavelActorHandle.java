package dev.ravel.workers.actor;

import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.SpanNames;
import io.ray.api.ActorHandle;
import io.ray.api.PyActorHandle;
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
 * <p>A handle on a Python actor ({@link RavelActors#python}) takes the same calls: the carrier goes beside the
 * arguments as JSON, the arguments and the result in their JSON wire form ({@link CrossLanguageCodec}), the
 * method by its snake-case name ({@code generateAsync} -> {@code generate_async}), and a Python exception comes
 * back as a {@link PythonWorkerException}.
 *
 * <p>{@link #local} makes a handle on an actor in this process, whose calls take the same path (context
 * captured, arguments encoded, the role method run in its {@code rl.<role>.<method>} span, the result
 * decoded) without Ray: for tests and single-process tools.
 */
public final class RavelActorHandle<I> implements Serializable {
  private static final long serialVersionUID = 1L;

  private final Transport transport;
  private final Class<I> role;

  RavelActorHandle(ActorHandle<RavelActor> handle, Class<I> role) {
    this(new Transport.JavaActor(handle), role);
  }

  RavelActorHandle(PyActorHandle python, CrossLanguageCodec codec, Class<I> role) {
    this(new Transport.PythonActor(python, codec), role);
  }

  private RavelActorHandle(Transport transport, Class<I> role) {
    this.transport = transport;
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
    return new RavelActorHandle<>(new Transport.InProcess(LocalActors.register(actor, maxConcurrency)), role);
  }

  /** Whether this handle's actor is a Python actor ({@link RavelActors#python}). */
  public boolean isPython() {
    return transport instanceof Transport.PythonActor;
  }

  /** Whether this handle's actor runs in this process ({@link #local}). */
  public boolean isLocal() {
    return transport instanceof Transport.InProcess;
  }

  /** Stops an in-process actor's call threads (calls after this fail); nothing for a Ray handle. */
  public void release() {
    transport.release();
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
    return transport.send(RoleMethod.of(methodRef), args, role);
  }

  /** A Java role method's name in Python: snake case ({@code generateAsync} -> {@code generate_async}). */
  static String pythonName(String javaName) {
    return SpanNames.snakeCase(javaName);
  }

  /** The W3C carrier as the JSON object a Python actor's {@code role_method} resumes. */
  static String carrierJson(TraceCarrier carrier) {
    return Transport.PythonActor.carrierJson(carrier);
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
  public io.ray.api.BaseActorHandle rayHandle() {
    return transport.rayHandle();
  }

  @Override
  public String toString() {
    return role.getSimpleName() + "@" + transport.id();
  }
}
