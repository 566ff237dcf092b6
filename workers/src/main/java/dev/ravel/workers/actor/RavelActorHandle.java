package dev.ravel.workers.actor;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.SpanNames;
import io.ray.api.ActorHandle;
import io.ray.api.ObjectRef;
import io.ray.api.PyActorHandle;
import io.ray.api.function.PyActorMethod;
import java.io.Serializable;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

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
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Return types of role methods, by interface, name and descriptor. */
  private static final Map<String, Type> RETURN_TYPES = new ConcurrentHashMap<>();
  /** Python's Ray takes at most 5 arguments per call from Java: the carrier, the arguments, 3 object refs. */
  private static final int MAX_PYTHON_REFS = 3;

  /** Null for an in-process or a Python handle. */
  private final ActorHandle<RavelActor> handle;
  /** Null for a Ray handle. */
  private final String localId;
  /** Null but for a Python handle. */
  private final PyActorHandle python;
  private final CrossLanguageCodec codec;
  private final Class<I> role;

  RavelActorHandle(ActorHandle<RavelActor> handle, Class<I> role) {
    this(handle, null, null, null, role);
  }

  RavelActorHandle(PyActorHandle python, CrossLanguageCodec codec, Class<I> role) {
    this(null, null, python, codec, role);
  }

  private RavelActorHandle(ActorHandle<RavelActor> handle, String localId, PyActorHandle python,
      CrossLanguageCodec codec, Class<I> role) {
    this.handle = handle;
    this.localId = localId;
    this.python = python;
    this.codec = codec;
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
    return new RavelActorHandle<>(null, LocalActors.register(actor, maxConcurrency), null, null, role);
  }

  /** Whether this handle's actor is a Python actor ({@link RavelActors#python}). */
  public boolean isPython() {
    return python != null;
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
    if (python != null) {
      return sendPython(m, args);
    }
    ActorInvocation call = new ActorInvocation(TraceCarrier.current(), m.name(), m.descriptor(), args);
    if (localId != null) {
      return new RavelRef<>(LocalActors.invoke(localId, call));
    }
    return new RavelRef<>(handle.task(RavelActor::invoke, Codec.encode(call)).remote());
  }

  /**
   * A call to the Python actor: {@code (carrier, args, refs...)} to its snake-case method, the JSON result
   * decoded into the role method's return type when read.
   */
  private <R> RavelRef<R> sendPython(RoleMethod m, Object[] args) {
    List<ObjectRef<?>> refs = new ArrayList<>();
    String argsJson = codec.encodeArgs(args, refs);
    if (refs.size() > MAX_PYTHON_REFS) {
      throw new IllegalArgumentException(m.name() + ": at most " + MAX_PYTHON_REFS
          + " object references per call to a Python actor, got " + refs.size());
    }
    Object[] a = new Object[2 + refs.size()];
    a[0] = carrierJson(TraceCarrier.current());
    a[1] = argsJson;
    for (int i = 0; i < refs.size(); i++) {
      a[2 + i] = refs.get(i);
    }
    PyActorMethod<byte[]> method = PyActorMethod.of(pythonName(m.name()), byte[].class);
    ObjectRef<byte[]> ref = switch (a.length) {
      case 2 -> python.task(method, a[0], a[1]).remote();
      case 3 -> python.task(method, a[0], a[1], a[2]).remote();
      case 4 -> python.task(method, a[0], a[1], a[2], a[3]).remote();
      default -> python.task(method, a[0], a[1], a[2], a[3], a[4]).remote();
    };
    Type type = returnType(m);
    CrossLanguageCodec c = codec;
    @SuppressWarnings("unchecked")
    RavelRef<R> out = new RavelRef<>(ref, bytes -> (R) c.decode(bytes, type),
        python.getClassName() + "." + pythonName(m.name()));
    return out;
  }

  private Type returnType(RoleMethod m) {
    return RETURN_TYPES.computeIfAbsent(role.getName() + "#" + m.name() + m.descriptor(), k -> {
      for (Method x : role.getMethods()) {
        if (x.getName().equals(m.name()) && descriptor(x).equals(m.descriptor())) {
          return x.getGenericReturnType();
        }
      }
      throw new IllegalArgumentException(role.getName() + " has no method " + m.name() + m.descriptor());
    });
  }

  private static String descriptor(Method x) {
    return java.lang.invoke.MethodType.methodType(x.getReturnType(), x.getParameterTypes()).toMethodDescriptorString();
  }

  /** A Java role method's name in Python: snake case ({@code generateAsync} -> {@code generate_async}). */
  static String pythonName(String javaName) {
    return SpanNames.snakeCase(javaName);
  }

  /** The W3C carrier as the JSON object a Python actor's {@code role_method} resumes. */
  static String carrierJson(TraceCarrier carrier) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("traceparent", carrier.traceparent());
    m.put("tracestate", carrier.tracestate());
    m.put("baggage", carrier.baggage());
    try {
      return JSON.writeValueAsString(m);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write a trace carrier as JSON", e);
    }
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
    if (python != null) {
      return python;
    }
    if (handle == null) {
      throw new IllegalStateException("in-process actor " + localId + " has no Ray handle");
    }
    return handle;
  }

  @Override
  public String toString() {
    return role.getSimpleName() + "@" + (python != null ? "python:" + python.getId() : handle == null ? localId : handle.getId());
  }
}
