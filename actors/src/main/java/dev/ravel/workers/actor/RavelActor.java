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

  protected RavelActor() {
    this.role = roleOf(getClass());
    this.telemetry = WorkerProcess.telemetry(role.name());
  }

  /** This process's span helper. */
  protected final Spans spans() {
    return telemetry.spans();
  }

  /** This process's telemetry. */
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
   */
  public final byte[] invoke(byte[] call) throws Exception {
    return serve((ActorInvocation) Codec.decode(call));
  }

  /** Runs one decoded call: context resumed, the role method in its span, the result encoded. */
  final byte[] serve(ActorInvocation call) throws Exception {
    Target t = targets.computeIfAbsent(new MethodKey(call.method(), call.descriptor()), k -> target(call));
    Method m = t.method();
    io.opentelemetry.context.Context parent = call.carrier().extract();
    if (!call.carrier().traceparent().isEmpty()
        && !io.opentelemetry.api.trace.Span.fromContext(parent).getSpanContext().isValid()) {
      malformed(call);
    }
    if (!t.traced()) {
      try (var scope = parent.makeCurrent()) {
        return Codec.encode(dispatch(m, call.args()));
      }
    }
    try (ScopedSpan s = spans().start(SpanGroup.WORKER, t.spanName(), SpanKind.SERVER, parent)) {
      s.set(RavelAttributes.ACTOR_ROLE, role.name()).set(RavelAttributes.ACTOR_METHOD, m.getName());
      try {
        return Codec.encode(dispatch(m, call.args()));
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
  private void malformed(ActorInvocation call) {
    io.opentelemetry.api.metrics.LongCounter c = malformedCarriers;
    if (c == null) {
      c = telemetry.openTelemetry().getMeter(Spans.SCOPE).counterBuilder(TraceCarrier.MALFORMED_METRIC)
          .setDescription("Actor calls whose trace carrier could not be resumed (they start a new trace)").build();
      malformedCarriers = c;
    }
    c.add(1, io.opentelemetry.api.common.Attributes.of(RavelAttributes.ACTOR_ROLE, role.name()));
    if (MALFORMED_LOGGED.compareAndSet(false, true)) {
      org.slf4j.LoggerFactory.getLogger(RavelActor.class).warn("{}.{}: malformed trace carrier (traceparent '{}');"
          + " the call starts a new trace (counted in {}, logged once per process)", role.name(), call.method(),
          call.carrier().traceparent(), TraceCarrier.MALFORMED_METRIC);
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
