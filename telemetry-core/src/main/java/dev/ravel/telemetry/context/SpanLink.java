package dev.ravel.telemetry.context;

import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import java.io.Serializable;
import java.util.Objects;

/**
 * A span another process may link to, as a small immutable, serializable value: the span's trace id, span
 * id and trace flags. Where {@link TraceCarrier} makes a callee's spans children of the caller's, a link
 * points at a span without nesting under it; for example the step that trains on a trajectory links to
 * the {@code rl.vllm.generate} span that produced it, which ran in an earlier step's trace.
 *
 * <p>Made from a span with {@link #of(SpanContext)} on one side, turned back into a link with
 * {@link #spanContext()} on the other ({@code ScopedSpan.link(SpanLink)} does it); nothing else writes or
 * parses its fields.
 */
public final class SpanLink implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Points nowhere: the span it came from was not recorded. Linking to it does nothing. */
  public static final SpanLink NONE = new SpanLink(SpanContext.getInvalid().getTraceId(),
      SpanContext.getInvalid().getSpanId(), TraceFlags.getDefault().asByte());

  private final String traceId;
  private final String spanId;
  private final byte flags;

  private SpanLink(String traceId, String spanId, byte flags) {
    this.traceId = traceId;
    this.spanId = spanId;
    this.flags = flags;
  }

  /** A link to the span with this context; {@link #NONE} for an invalid context. */
  public static SpanLink of(SpanContext context) {
    if (context == null || !context.isValid()) {
      return NONE;
    }
    return new SpanLink(context.getTraceId(), context.getSpanId(), context.getTraceFlags().asByte());
  }

  /** Whether this points at a span (false for {@link #NONE}). */
  public boolean isValid() {
    return !this.equals(NONE);
  }

  /** The linked span's context, as a remote one, with the flags it was sampled with. */
  public SpanContext spanContext() {
    if (!isValid()) {
      return SpanContext.getInvalid();
    }
    return SpanContext.createFromRemoteParent(traceId, spanId, TraceFlags.fromByte(flags), TraceState.getDefault());
  }

  public String traceId() {
    return traceId;
  }

  public String spanId() {
    return spanId;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SpanLink l && traceId.equals(l.traceId) && spanId.equals(l.spanId) && flags == l.flags;
  }

  @Override
  public int hashCode() {
    return Objects.hash(traceId, spanId, flags);
  }

  @Override
  public String toString() {
    return isValid() ? "SpanLink{" + traceId + "/" + spanId + "}" : "SpanLink{none}";
  }
}
