package dev.ravel.telemetry.spans;

import dev.ravel.telemetry.context.SpanLink;
import dev.ravel.telemetry.context.TraceCarrier;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;

/**
 * A started span that is current until {@link #close()}: use it in try-with-resources,
 * {@code try (var s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) { ... }}. When the span's group
 * is off, {@link Spans#start} returns a shared instance whose methods do nothing.
 */
public final class ScopedSpan implements AutoCloseable {
  static final ScopedSpan NOOP = new ScopedSpan(Span.getInvalid(), null, false);

  private final Span span;
  private final Scope scope;
  private final boolean recording;

  ScopedSpan(Span span, Scope scope, boolean recording) {
    this.span = span;
    this.scope = scope;
    this.recording = recording;
  }

  /**
   * Sets a {@code long} attribute on the span; nothing when it is not recording.
   *
   * @param key the attribute's key
   * @param value the attribute's value
   * @return this span
   */
  public ScopedSpan set(AttributeKey<Long> key, long value) {
    if (recording) {
      span.setAttribute(key, value);
    }
    return this;
  }

  /**
   * Sets an attribute on the span; nothing when it is not recording or {@code value} is {@code null}.
   *
   * @param <T> the attribute's value type
   * @param key the attribute's key
   * @param value the attribute's value; may be {@code null}
   * @return this span
   */
  public <T> ScopedSpan set(AttributeKey<T> key, T value) {
    if (recording && value != null) {
      span.setAttribute(key, value);
    }
    return this;
  }

  /**
   * Links this span to another (for example, the job run a step belongs to).
   *
   * @param other the span to link to; {@code null} or an invalid context adds no link
   * @return this span
   */
  public ScopedSpan link(SpanContext other) {
    if (recording && other != null && other.isValid()) {
      span.addLink(other);
    }
    return this;
  }

  /**
   * Links this span to one another process handed over (for example, the rollout a training step consumed).
   *
   * @param other the span to link to; {@code null} or an invalid link adds no link
   * @return this span
   */
  public ScopedSpan link(SpanLink other) {
    return other == null ? this : link(other.spanContext());
  }

  /**
   * Links this span to one another process handed over, with attributes on the link.
   *
   * @param other the span to link to; {@code null} or an invalid link adds no link
   * @param attributes the link's attributes
   * @return this span
   */
  public ScopedSpan link(SpanLink other, io.opentelemetry.api.common.Attributes attributes) {
    if (recording && other != null && other.isValid()) {
      span.addLink(other.spanContext(), attributes);
    }
    return this;
  }

  /** {@return a link to this span, for another process to link to; {@link SpanLink#NONE} when it is not recorded} */
  public SpanLink asLink() {
    return recording ? SpanLink.of(span.getSpanContext()) : SpanLink.NONE;
  }

  /**
   * Adds an event, timestamped now; nothing when the span is not recording.
   *
   * @param name the event's name
   * @return this span
   */
  public ScopedSpan event(String name) {
    if (recording) {
      span.addEvent(name);
    }
    return this;
  }

  /**
   * Records {@code error} and marks the span as failed.
   *
   * @param error the exception; its message becomes the error status's description
   * @return this span
   */
  public ScopedSpan error(Throwable error) {
    if (recording) {
      span.recordException(error);
      span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
    }
    return this;
  }

  /**
   * Marks the span as failed without an exception.
   *
   * @param description the error status's description
   * @return this span
   */
  public ScopedSpan error(String description) {
    if (recording) {
      span.setStatus(StatusCode.ERROR, description);
    }
    return this;
  }

  /** {@return whether the span is recorded (false when its group is off)} */
  public boolean isRecording() {
    return recording;
  }

  /** {@return the span's context; invalid when the span is not recorded} */
  public SpanContext spanContext() {
    return span.getSpanContext();
  }

  /** {@return the carrier of this span (or of the current context when the span's group is off)} */
  public TraceCarrier carrier() {
    return recording ? TraceCarrier.capture(Context.current().with(span)) : TraceCarrier.current();
  }

  /** Ends the span and restores the previous context. */
  @Override
  public void close() {
    if (scope != null) {
      scope.close();
    }
    if (recording) {
      span.end();
    }
  }
}
