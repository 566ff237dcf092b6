package dev.ravel.workers.actor;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.context.TraceCarrier;
import io.ray.api.ActorHandle;
import io.ray.api.BaseActorHandle;
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
 * How a {@link RavelActorHandle}'s calls reach its actor: a Java actor through Ray, a Python actor through
 * Ray's cross-language calls, or an actor in this process. Each carries the caller's trace context beside the
 * arguments. Plain final classes rather than records: Ray serializes handles inside other actors' arguments.
 */
abstract sealed class Transport implements Serializable
    permits Transport.JavaActor, Transport.PythonActor, Transport.InProcess {
  private static final long serialVersionUID = 1L;

  /** Sends {@code m(args)} with the caller's current context; the result as a {@code role} method returns it. */
  abstract <R> RavelRef<R> send(RoleMethod m, Object[] args, Class<?> role);

  /** The Ray handle, to kill the actor or pass it to Ray's own APIs. */
  abstract BaseActorHandle rayHandle();

  /** Stops what the transport holds in this process (an in-process actor's threads); nothing otherwise. */
  void release() {}

  /** The actor's id, as {@code toString} of the handle shows it. */
  abstract String id();

  /** A Java {@link RavelActor} on Ray: the invocation, context inside, encoded as one argument. */
  static final class JavaActor extends Transport {
    private static final long serialVersionUID = 1L;
    private final ActorHandle<RavelActor> handle;

    JavaActor(ActorHandle<RavelActor> handle) {
      this.handle = handle;
    }

    @Override
    <R> RavelRef<R> send(RoleMethod m, Object[] args, Class<?> role) {
      ActorInvocation call = new ActorInvocation(TraceCarrier.current(), m.name(), m.descriptor(), args);
      return new RavelRef<>(handle.task(RavelActor::invoke, Codec.encode(call)).remote());
    }

    @Override
    BaseActorHandle rayHandle() {
      return handle;
    }

    @Override
    String id() {
      return handle.getId().toString();
    }
  }

  /** An actor in this process ({@link RavelActorHandle#local}): the same invocation, without Ray. */
  static final class InProcess extends Transport {
    private static final long serialVersionUID = 1L;
    private final String localId;

    InProcess(String localId) {
      this.localId = localId;
    }

    @Override
    <R> RavelRef<R> send(RoleMethod m, Object[] args, Class<?> role) {
      return new RavelRef<>(LocalActors.invoke(localId,
          new ActorInvocation(TraceCarrier.current(), m.name(), m.descriptor(), args)));
    }

    @Override
    BaseActorHandle rayHandle() {
      throw new IllegalStateException("in-process actor " + localId + " has no Ray handle");
    }

    @Override
    void release() {
      LocalActors.release(localId);
    }

    @Override
    String id() {
      return localId;
    }
  }

  /**
   * A Python actor ({@link RavelActors#python}): {@code (carrier, args, refs...)} to its snake-case method, the
   * carrier and the arguments as JSON, the JSON result decoded into the role method's return type when read.
   */
  static final class PythonActor extends Transport {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Return types of role methods, by interface, name and descriptor. */
    private static final Map<String, Type> RETURN_TYPES = new ConcurrentHashMap<>();
    /** Python's Ray takes at most 5 arguments per call from Java: the carrier, the arguments, 3 object refs. */
    static final int MAX_REFS = 3;

    private final PyActorHandle python;
    private final CrossLanguageCodec codec;

    PythonActor(PyActorHandle python, CrossLanguageCodec codec) {
      this.python = python;
      this.codec = codec;
    }

    @Override
    <R> RavelRef<R> send(RoleMethod m, Object[] args, Class<?> role) {
      List<ObjectRef<?>> refs = new ArrayList<>();
      String argsJson = codec.encodeArgs(args, refs);
      if (refs.size() > MAX_REFS) {
        throw new IllegalArgumentException(m.name() + ": at most " + MAX_REFS
            + " object references per call to a Python actor, got " + refs.size());
      }
      Object[] a = new Object[2 + refs.size()];
      a[0] = carrierJson(TraceCarrier.current());
      a[1] = argsJson;
      for (int i = 0; i < refs.size(); i++) {
        a[2 + i] = refs.get(i);
      }
      String name = RavelActorHandle.pythonName(m.name());
      PyActorMethod<byte[]> method = PyActorMethod.of(name, byte[].class);
      ObjectRef<byte[]> ref = switch (a.length) {
        case 2 -> python.task(method, a[0], a[1]).remote();
        case 3 -> python.task(method, a[0], a[1], a[2]).remote();
        case 4 -> python.task(method, a[0], a[1], a[2], a[3]).remote();
        default -> python.task(method, a[0], a[1], a[2], a[3], a[4]).remote();
      };
      Type type = returnType(role, m);
      CrossLanguageCodec c = codec;
      @SuppressWarnings("unchecked")
      RavelRef<R> out = new RavelRef<>(ref, bytes -> (R) c.decode(bytes, type), python.getClassName() + "." + name);
      return out;
    }

    @Override
    BaseActorHandle rayHandle() {
      return python;
    }

    @Override
    String id() {
      return "python:" + python.getId();
    }

    private static Type returnType(Class<?> role, RoleMethod m) {
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
      return java.lang.invoke.MethodType.methodType(x.getReturnType(), x.getParameterTypes())
          .toMethodDescriptorString();
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
  }
}
