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
 *
 * @param <I> the role interface
 */
public final class RavelActorHandle<I> implements Serializable {
  private static final long serialVersionUID = 1L;

  /** How calls reach the actor: a Ray Java actor, a Ray Python actor, or an in-process actor. */
  private final Transport transport;
  /** The role interface. */
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
   * @param <I> the role interface
   * @param actor the actor that serves the calls
   * @param role the role interface, which {@code actor} implements
   * @param maxConcurrency the most calls served at once
   * @return a handle on {@code actor}
   * @throws IllegalArgumentException when {@code actor} does not implement {@code role}
   */
  public static <I> RavelActorHandle<I> local(RavelActor actor, Class<I> role, int maxConcurrency) {
    if (!role.isInstance(actor)) {
      throw new IllegalArgumentException(actor.getClass().getName() + " does not implement " + role.getName());
    }
    return new RavelActorHandle<>(new Transport.InProcess(LocalActors.register(actor, maxConcurrency)), role);
  }

  /** {@return whether this handle's actor is a Python actor ({@link RavelActors#python})} */
  public boolean isPython() {
    return transport instanceof Transport.PythonActor;
  }

  /** {@return whether this handle's actor runs in this process ({@link #local})} */
  public boolean isLocal() {
    return transport instanceof Transport.InProcess;
  }

  /** Stops an in-process actor's call threads (calls after this fail); nothing for a Ray handle. */
  public void release() {
    transport.release();
  }

  /**
   * Calls a role method that takes no argument, carrying the caller's current trace context.
   *
   * @param <R> the method's result type
   * @param method a method reference of the role interface, e.g. {@code Greeter::count}
   * @return the pending result
   * @throws IllegalArgumentException if {@code method} is not a method reference, or an argument cannot be sent
   */
  public <R> RavelRef<R> call(RemoteMethod.M0<I, R> method) {
    return send(method);
  }

  /**
   * Calls a role method that takes one argument, carrying the caller's current trace context.
   *
   * @param <A> the argument's type
   * @param <R> the method's result type
   * @param method a method reference of the role interface, e.g. {@code Greeter::greet}
   * @param a the argument
   * @return the pending result
   * @throws IllegalArgumentException if {@code method} is not a method reference, or an argument cannot be sent
   */
  public <A, R> RavelRef<R> call(RemoteMethod.M1<I, A, R> method, A a) {
    return send(method, a);
  }

  /**
   * Calls a role method that takes two arguments, carrying the caller's current trace context.
   *
   * @param <A> the first argument's type
   * @param <B> the second argument's type
   * @param <R> the method's result type
   * @param method a method reference of the role interface
   * @param a the first argument
   * @param b the second argument
   * @return the pending result
   * @throws IllegalArgumentException if {@code method} is not a method reference, or an argument cannot be sent
   */
  public <A, B, R> RavelRef<R> call(RemoteMethod.M2<I, A, B, R> method, A a, B b) {
    return send(method, a, b);
  }

  /**
   * Calls a role method that takes three arguments, carrying the caller's current trace context.
   *
   * @param <A> the first argument's type
   * @param <B> the second argument's type
   * @param <C> the third argument's type
   * @param <R> the method's result type
   * @param method a method reference of the role interface
   * @param a the first argument
   * @param b the second argument
   * @param c the third argument
   * @return the pending result
   * @throws IllegalArgumentException if {@code method} is not a method reference, or an argument cannot be sent
   */
  public <A, B, C, R> RavelRef<R> call(RemoteMethod.M3<I, A, B, C, R> method, A a, B b, C c) {
    return send(method, a, b, c);
  }

  /**
   * Calls a role method that takes four arguments, carrying the caller's current trace context.
   *
   * @param <A> the first argument's type
   * @param <B> the second argument's type
   * @param <C> the third argument's type
   * @param <D> the fourth argument's type
   * @param <R> the method's result type
   * @param method a method reference of the role interface
   * @param a the first argument
   * @param b the second argument
   * @param c the third argument
   * @param d the fourth argument
   * @return the pending result
   * @throws IllegalArgumentException if {@code method} is not a method reference, or an argument cannot be sent
   */
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

  /** {@return the role interface} */
  public Class<I> role() {
    return role;
  }

  /**
   * The underlying Ray handle (to kill the actor or pass it to Ray APIs).
   *
   * @return the Ray handle of this handle's actor
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
