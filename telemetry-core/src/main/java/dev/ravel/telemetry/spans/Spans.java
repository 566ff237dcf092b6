package dev.ravel.telemetry.spans;

import dev.ravel.telemetry.config.SpanGroup;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * Starts Ravel's spans so that algorithm code stays one line per span:
 * <pre>{@code
 * try (var s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) { ... }
 * double[] r = spans.call(Phase.REWARD, s -> score(batch)); // a phase: its group, name and rl.bucket; errors recorded
 * }</pre>
 * A span whose group is off is not created at all: {@link #start} returns a shared no-op and the current
 * context is left as it is, so spans below it nest under the nearest recording ancestor.
 */
public final class Spans {
  /** The instrumentation scope name of Ravel's spans. */
  public static final String SCOPE = "dev.ravel";

  private static final Spans NOOP = new Spans(OpenTelemetry.noop().getTracer(SCOPE), Set.of());

  private final Tracer tracer;
  private final Set<SpanGroup> on;

  private Spans(Tracer tracer, Set<SpanGroup> on) {
    this.tracer = tracer;
    this.on = on.isEmpty() ? EnumSet.noneOf(SpanGroup.class) : EnumSet.copyOf(on);
  }

  /**
   * Spans from {@code otel}'s tracer for the groups in {@code on}.
   *
   * @param otel the OpenTelemetry instance whose tracer (scope {@link #SCOPE}) makes the spans, not {@code null}
   * @param on the groups that are on (copied); spans of other groups are not created
   * @return the span helper
   */
  public static Spans create(OpenTelemetry otel, Set<SpanGroup> on) {
    return new Spans(Objects.requireNonNull(otel, "otel").getTracer(SCOPE), on);
  }

  /** {@return a shared span helper whose groups are all off} */
  public static Spans noop() {
    return NOOP;
  }

  /**
   * {@return whether spans of {@code group} are created}
   *
   * @param group the span group
   */
  public boolean isOn(SpanGroup group) {
    return on.contains(group);
  }

  /** {@return the tracer that makes the spans (scope {@link #SCOPE})} */
  public Tracer tracer() {
    return tracer;
  }

  /**
   * Starts {@code name} as a child of the current span and makes it current.
   *
   * @param group the span's group; when it is off, no span is created
   * @param name the span's name
   * @return the started span, to close; a shared no-op when the group is off
   */
  public ScopedSpan start(SpanGroup group, String name) {
    return start(group, name, SpanKind.INTERNAL, null);
  }

  /**
   * Starts {@code name} as a child of {@code parent} (for example a context resumed from a carrier).
   *
   * @param group the span's group; when it is off, no span is created, but a non-null {@code parent} is still
   *     made current until the returned span is closed
   * @param name the span's name
   * @param parent the parent context; {@code null} for the current context
   * @return the started span, to close
   */
  public ScopedSpan start(SpanGroup group, String name, Context parent) {
    return start(group, name, SpanKind.INTERNAL, parent);
  }

  /**
   * Starts a span of the given kind under {@code parent} (the current context when null) and makes it current.
   *
   * @param group the span's group; when it is off, no span is created, but a non-null {@code parent} is still
   *     made current until the returned span is closed
   * @param name the span's name
   * @param kind the span's kind
   * @param parent the parent context; {@code null} for the current context
   * @return the started span, to close; a shared no-op when the group is off and {@code parent} is {@code null}
   */
  public ScopedSpan start(SpanGroup group, String name, SpanKind kind, Context parent) {
    if (!on.contains(group)) {
      return parent == null ? ScopedSpan.NOOP : new ScopedSpan(Span.getInvalid(), parent.makeCurrent(), false);
    }
    Context base = parent == null ? Context.current() : parent;
    SpanBuilder b = tracer.spanBuilder(name).setParent(base).setSpanKind(kind);
    Span span = b.startSpan();
    return new ScopedSpan(span, base.with(span).makeCurrent(), true);
  }

  /**
   * Starts {@code name} as a child of {@code parent} only, and makes it current: when the group is off or
   * {@code parent} holds no valid span, nothing is started and the current context is left as it is (a shared no-op),
   * so that the span is never a root of its own (an actor's start-up span without the driver's start-up trace).
   *
   * @param group the span's group
   * @param name the span's name
   * @param parent the parent context; null counts as none
   * @return the started span, to close; a shared no-op when there is no parent or the group is off
   */
  public ScopedSpan startChild(SpanGroup group, String name, Context parent) {
    if (parent == null || !on.contains(group)
        || !io.opentelemetry.api.trace.Span.fromContext(parent).getSpanContext().isValid()) {
      return ScopedSpan.NOOP;
    }
    return start(group, name, SpanKind.INTERNAL, parent);
  }

  /**
   * Starts a step phase's span under the current span, with the phase's group and name and its
   * {@link RavelAttributes#BUCKET}.
   *
   * @param phase the step phase
   * @return the started span, to close
   */
  public ScopedSpan start(Phase phase) {
    return start(phase, null);
  }

  /**
   * Starts a step phase's span, as {@link #start(Phase)}, under {@code parent} (the current context when null).
   *
   * @param phase the step phase
   * @param parent the parent context; {@code null} for the current context
   * @return the started span, to close
   */
  public ScopedSpan start(Phase phase, Context parent) {
    return start(phase.group(), phase.spanName(), SpanKind.INTERNAL, parent)
        .set(RavelAttributes.BUCKET, phase.bucket().value());
  }

  /**
   * Runs {@code body} in a phase's span, as {@link #call(SpanGroup, String, Body)}.
   *
   * @param <T> the body's result type
   * @param <E> the exception the body may throw
   * @param phase the step phase
   * @param body the code to run, given the span
   * @return what {@code body} returned
   * @throws E what {@code body} threw, after the span recorded it
   */
  public <T, E extends Exception> T call(Phase phase, Body<T, E> body) throws E {
    try (ScopedSpan s = start(phase)) {
      return recorded(s, body);
    }
  }

  /**
   * Runs {@code body} in a span: an exception is recorded, the status set to error, and rethrown.
   *
   * @param <T> the body's result type
   * @param <E> the exception the body may throw
   * @param group the span's group; when it is off, {@code body} runs without a span
   * @param name the span's name
   * @param body the code to run, given the span
   * @return what {@code body} returned
   * @throws E what {@code body} threw, after the span recorded it
   */
  public <T, E extends Exception> T call(SpanGroup group, String name, Body<T, E> body) throws E {
    try (ScopedSpan s = start(group, name)) {
      return recorded(s, body);
    }
  }

  private static <T, E extends Exception> T recorded(ScopedSpan s, Body<T, E> body) throws E {
    try {
      return body.run(s);
    } catch (RuntimeException | Error e) {
      s.error(e);
      throw e;
    } catch (Exception e) {
      s.error(e);
      throw e;
    }
  }

  /**
   * Runs {@code body} in a span, as {@link #call}, for a body with no result.
   *
   * @param <E> the exception the body may throw
   * @param group the span's group; when it is off, {@code body} runs without a span
   * @param name the span's name
   * @param body the code to run, given the span
   * @throws E what {@code body} threw, after the span recorded it
   */
  public <E extends Exception> void run(SpanGroup group, String name, VoidBody<E> body) throws E {
    call(group, name, s -> {
      body.run(s);
      return null;
    });
  }

  /**
   * Records, under the current span, a span of group {@code group} that started at {@code startEpochNanos}
   * and failed now with {@code error}: for a call known to have failed only after the fact (the actor's
   * process died under it), whose success would have had no span of its own.
   *
   * @param group the span's group; when it is off, nothing is recorded
   * @param name the span's name
   * @param startEpochNanos when the call started, in nanoseconds since the epoch ({@link #nowEpochNanos()})
   * @param error the failure, recorded as the span's exception and error status
   * @param attributes attributes of the span
   */
  public void failed(SpanGroup group, String name, long startEpochNanos, Throwable error,
      io.opentelemetry.api.common.Attributes attributes) {
    if (!on.contains(group)) {
      return;
    }
    Span span = tracer.spanBuilder(name).setParent(Context.current()).setSpanKind(SpanKind.CLIENT)
        .setStartTimestamp(startEpochNanos, java.util.concurrent.TimeUnit.NANOSECONDS).setAllAttributes(attributes)
        .startSpan();
    span.recordException(error);
    span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
    span.end();
  }

  /** {@return now, in nanoseconds since the epoch: the start of a call that may later be {@link #failed}} */
  public static long nowEpochNanos() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  /**
   * Marks the current span as failed; used by callers that caught an exception themselves.
   *
   * @param error the exception, recorded on the span; its message becomes the error status's description
   */
  public static void recordError(Throwable error) {
    Span span = Span.current();
    span.recordException(error);
    span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
  }

  /**
   * A body that returns a value and may throw.
   *
   * @param <T> the result type
   * @param <E> the exception the body may throw
   */
  @FunctionalInterface
  public interface Body<T, E extends Exception> {
    /**
     * Runs the body.
     *
     * @param span the span it runs in
     * @return the body's result
     * @throws E when the body fails
     */
    T run(ScopedSpan span) throws E;
  }

  /**
   * A body with no result that may throw.
   *
   * @param <E> the exception the body may throw
   */
  @FunctionalInterface
  public interface VoidBody<E extends Exception> {
    /**
     * Runs the body.
     *
     * @param span the span it runs in
     * @throws E when the body fails
     */
    void run(ScopedSpan span) throws E;
  }
}
