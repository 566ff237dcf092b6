package dev.ravel.workers.actor;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import io.opentelemetry.api.trace.SpanKind;
import java.lang.invoke.MethodType;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Base class of every Ravel actor: the receiving side of the one propagation mechanism. Ray calls only
 * {@link #invoke}; it resumes the caller's context from the call's carrier, runs the role method in a
 * span {@code rl.<role>.<method>} (group {@link SpanGroup#WORKER}) under it, records and rethrows an
 * exception as itself, and ends the span. Actor implementations just implement their role interface and
 * open their own inner spans with {@link #spans()}.
 */
public abstract class RavelActor implements RavelRole {
  private final ActorRole role;
  private final ProcessTelemetry telemetry;
  /** Resolved once per method: the reflection look-ups, annotations and span name are not redone per call. */
  private final Map<MethodKey, Target> targets = new ConcurrentHashMap<>();

  private record MethodKey(String name, String descriptor) {}

  /** A role method, whether it gets a span, and the span's name. */
  private record Target(Method method, boolean traced, String spanName) {}

  /**
   * Sets up the actor: finds its role (the {@link ActorRole} of an interface it implements) and its process's
   * telemetry, which the process's first actor starts.
   *
   * @throws IllegalStateException if the class implements no role interface annotated with {@link ActorRole}
   */
  protected RavelActor() {
    this.role = roleOf(getClass());
    this.telemetry = WorkerProcess.telemetry(role.name());
  }

  /** {@return this process's span helper} */
  protected final Spans spans() {
    return telemetry.spans();
  }

  /**
   * Starts this actor's start-up span {@code name} (group {@link SpanGroup#WORKER}) for its constructor's work, and
   * makes it current: a child of the span the driver named in the actor's environment when it created it
   * ({@link TraceCarrier#STARTUP_ENV}: its role's {@code rl.run.actors.<role>} in the run's start-up trace, docs/design.md).
   * A no-op when there is none (an actor created outside a run's start-up), when Ray restarted this actor, or when the
   * group is off: never a trace of its own. Never throws.
   *
   * @param name the span's name ({@link SpanNames#WORKER_START_BACKEND}, {@link SpanNames#TRAINER_LOAD_MODEL})
   * @return the span, to close
   */
  protected final ScopedSpan startupSpan(String name) {
    io.opentelemetry.context.Context parent;
    try {
      parent = WorkerProcess.startupParent();
    } catch (RuntimeException e) { // telemetry never fails an actor's start
      parent = null;
    }
    return spans().startChild(SpanGroup.WORKER, name, parent);
  }

  /** {@return this process's telemetry} */
  protected final ProcessTelemetry telemetry() {
    return telemetry;
  }

  @Override
  public ExportStats telemetryStats() {
    return telemetry.stats();
  }

  @Override
  public long processId() {
    return ProcessHandle.current().pid();
  }

  @Override
  public ExportStats flushTelemetry(long timeoutMs) {
    telemetry.flush(Duration.ofMillis(timeoutMs));
    return telemetry.stats();
  }

  /**
   * The single remote entry point of every Ravel actor. Not for direct use: {@link RavelActorHandle}
   * builds the invocation. It arrives as bytes ({@link Codec}), which Ray moves as they are: a Java object
   * argument would go through Ray's general serializer on both sides, which costs more per call.
   *
   * @param call the {@link ActorInvocation} as {@link Codec} writes it
   * @return the role method's result as {@link Codec} writes it
   * @throws IllegalArgumentException if the actor has no method of the call's name and descriptor
   * @throws Exception what the role method threw, rethrown as itself
   */
  public final byte[] invoke(byte[] call) throws Exception {
    return serve((ActorInvocation) Codec.decode(call));
  }

  /** Runs one decoded call: context resumed, the role method in its span, the result encoded. */
  final byte[] serve(ActorInvocation call) throws Exception {
    Target t = targets.computeIfAbsent(new MethodKey(call.method(), call.descriptor()), k -> target(call));
    return Codec.encode(run(t, call.carrier(), call.method(), call.args()));
  }

  /**
   * The entry point of calls from Python ({@code ravel_workers.java_actor(name).call(method, *args)}). Not for
   * direct use. {@code carrier} is the JSON object {@code {"traceparent", "tracestate", "baggage"}}, {@code method}
   * the role method's name (as in Java, or in snake case), {@code args} the JSON array of its arguments in their
   * wire form ({@link JsonWire}). The answer is UTF-8 JSON: {@code {"ok": result}}, or {@code {"error": {"type",
   * "message"}}} when the method threw (the span records it as for any call), so the Python caller raises it with
   * its Java type and message.
   *
   * @param carrier the caller's trace context as JSON; {@code null} or blank starts a new trace
   * @param method the role method's name, in Java or snake case
   * @param args the JSON array of the method's arguments; {@code null} or empty means none
   * @return the UTF-8 JSON answer, {@code {"ok": ...}} or {@code {"error": ...}}: a failure is answered, not thrown
   */
  public final byte[] invokeJson(String carrier, String method, String args) {
    com.fasterxml.jackson.databind.node.ObjectNode answer = CALL_JSON.createObjectNode();
    try {
      Target t = targets.computeIfAbsent(new MethodKey(method, "json"), k -> jsonTarget(method));
      com.fasterxml.jackson.databind.JsonNode a = CALL_JSON.readTree(args == null || args.isEmpty() ? "[]" : args);
      java.lang.reflect.Type[] types = t.method().getGenericParameterTypes();
      if (!a.isArray() || a.size() != types.length) {
        throw new IllegalArgumentException(role.name() + "." + t.method().getName() + " takes " + types.length
            + " argument(s), got " + (a.isArray() ? a.size() + "" : "no JSON array"));
      }
      Object[] values = new Object[types.length];
      for (int i = 0; i < types.length; i++) {
        try {
          values[i] = JsonWire.decode(a.get(i), types[i]);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(role.name() + "." + t.method().getName() + " argument " + (i + 1) + ": "
              + e.getMessage(), e);
        }
      }
      Object result = run(t, carrierOf(carrier), method, values);
      answer.set("ok", JsonWire.encode(result, new java.util.ArrayList<>()));
    } catch (Exception | Error e) {
      com.fasterxml.jackson.databind.node.ObjectNode err = answer.removeAll().putObject("error");
      err.put("type", e.getClass().getName());
      err.put("message", String.valueOf(e.getMessage()));
    }
    return answer.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  private static final com.fasterxml.jackson.databind.ObjectMapper CALL_JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  private static TraceCarrier carrierOf(String json) throws java.io.IOException {
    if (json == null || json.isBlank()) {
      return TraceCarrier.EMPTY;
    }
    com.fasterxml.jackson.databind.JsonNode c = CALL_JSON.readTree(json);
    return TraceCarrier.of(c.path("traceparent").asText(""), c.path("tracestate").asText(""),
        c.path("baggage").asText(""));
  }

  /** Runs a role method: context resumed from {@code carrier}, in its span unless untraced; returns its result. */
  private Object run(Target t, TraceCarrier carrier, String method, Object[] args) throws Exception {
    Method m = t.method();
    io.opentelemetry.context.Context parent = carrier.extract();
    if (!carrier.traceparent().isEmpty()
        && !io.opentelemetry.api.trace.Span.fromContext(parent).getSpanContext().isValid()) {
      malformed(method, carrier);
    }
    if (!t.traced()) {
      try (var scope = parent.makeCurrent()) {
        return dispatch(m, args);
      }
    }
    try (ScopedSpan s = spans().start(SpanGroup.WORKER, t.spanName(), SpanKind.SERVER, parent)) {
      s.set(RavelAttributes.ACTOR_ROLE, role.name()).set(RavelAttributes.ACTOR_METHOD, m.getName());
      try {
        return dispatch(m, args);
      } catch (Exception | Error e) {
        s.error(e);
        throw e;
      }
    }
  }

  private static final java.util.concurrent.atomic.AtomicBoolean MALFORMED_LOGGED =
      new java.util.concurrent.atomic.AtomicBoolean();
  private volatile io.opentelemetry.api.metrics.LongCounter malformedCarriers;

  /** A call whose carrier could not be resumed: counted, logged once per process; the call runs in a new trace. */
  private void malformed(String method, TraceCarrier carrier) {
    io.opentelemetry.api.metrics.LongCounter c = malformedCarriers;
    if (c == null) {
      c = telemetry.openTelemetry().getMeter(Spans.SCOPE).counterBuilder(TraceCarrier.MALFORMED_METRIC)
          .setDescription("Actor calls whose trace carrier could not be resumed (they start a new trace)").build();
      malformedCarriers = c;
    }
    c.add(1, io.opentelemetry.api.common.Attributes.of(RavelAttributes.ACTOR_ROLE, role.name()));
    if (MALFORMED_LOGGED.compareAndSet(false, true)) {
      org.slf4j.LoggerFactory.getLogger(RavelActor.class).warn("{}.{}: malformed trace carrier (traceparent '{}');"
          + " the call starts a new trace (counted in {}, logged once per process)", role.name(), method,
          carrier.traceparent(), TraceCarrier.MALFORMED_METRIC);
    }
  }

  private Object dispatch(Method m, Object[] args) throws Exception {
    try {
      return m.invoke(this, args);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof Exception ex) {
        throw ex;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw e;
    }
  }

  private Target target(ActorInvocation call) {
    Method m = resolve(call);
    boolean traced = !isRavelRoleMethod(m) && !untraced(m);
    return new Target(m, traced, traced ? SpanNames.actorCall(role.spans(), m.getName()) : null);
  }

  /** The role method called {@code name} (its Java name or snake case) for a call from Python: exactly one. */
  private Target jsonTarget(String name) {
    java.util.List<Method> found = new java.util.ArrayList<>();
    for (Method m : getClass().getMethods()) {
      if ((m.getName().equals(name) || SpanNames.snakeCase(m.getName()).equals(name)) && declaredByAnInterface(m)
          && found.stream().noneMatch(f -> f.getName().equals(m.getName())
              && java.util.Arrays.equals(f.getParameterTypes(), m.getParameterTypes()))) {
        found.add(m);
      }
    }
    if (found.size() != 1) {
      throw new IllegalArgumentException(found.isEmpty()
          ? role.name() + " (" + getClass().getName() + ") has no role method " + name
          : role.name() + "." + name + " is overloaded: a call from Python cannot choose among " + found);
    }
    Method m;
    try {
      m = getClass().getMethod(found.get(0).getName(), found.get(0).getParameterTypes());
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException(e);
    }
    m.setAccessible(true);
    boolean traced = !isRavelRoleMethod(m) && !untraced(m);
    return new Target(m, traced, traced ? SpanNames.actorCall(role.spans(), m.getName()) : null);
  }

  /**
   * Whether a role interface this actor implements (one annotated {@link ActorRole}, with what it extends, such as
   * {@link RavelRole}) declares {@code m}: only role methods are callable from Python, not another interface's.
   */
  private boolean declaredByAnInterface(Method m) {
    for (Class<?> c = getClass(); c != null; c = c.getSuperclass()) {
      for (Class<?> i : c.getInterfaces()) {
        if (!i.isAnnotationPresent(ActorRole.class)) {
          continue;
        }
        try {
          i.getMethod(m.getName(), m.getParameterTypes());
          return true;
        } catch (NoSuchMethodException e) {
          // not declared there
        }
      }
    }
    return false;
  }

  private Method resolve(ActorInvocation call) {
    try {
      Class<?>[] params = MethodType.fromMethodDescriptorString(call.descriptor(), getClass().getClassLoader())
          .parameterArray();
      Method m = getClass().getMethod(call.method(), params);
      m.setAccessible(true);
      return m;
    } catch (NoSuchMethodException e) {
      throw new IllegalArgumentException(getClass().getName() + " has no method " + call.method() + call.descriptor(), e);
    }
  }

  private boolean untraced(Method m) {
    if (m.isAnnotationPresent(Untraced.class)) {
      return true;
    }
    for (Class<?> i : getClass().getInterfaces()) {
      try {
        if (i.getMethod(m.getName(), m.getParameterTypes()).isAnnotationPresent(Untraced.class)) {
          return true;
        }
      } catch (NoSuchMethodException e) {
        // not declared there
      }
    }
    return false;
  }

  private static boolean isRavelRoleMethod(Method m) {
    try {
      RavelRole.class.getMethod(m.getName(), m.getParameterTypes());
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  static ActorRole roleOf(Class<?> type) {
    Deque<Class<?>> todo = new ArrayDeque<>();
    todo.add(type);
    while (!todo.isEmpty()) {
      Class<?> c = todo.poll();
      ActorRole r = c.getAnnotation(ActorRole.class);
      if (r != null && c.isInterface()) {
        return r;
      }
      if (c.getSuperclass() != null) {
        todo.add(c.getSuperclass());
      }
      todo.addAll(java.util.List.of(c.getInterfaces()));
    }
    throw new IllegalStateException(type.getName() + " implements no role interface annotated with @ActorRole");
  }
}
