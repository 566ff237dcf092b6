package dev.ravel.telemetry.context;

import io.opentelemetry.api.baggage.propagation.W3CBaggagePropagator;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The W3C trace context of a caller ({@code traceparent}, {@code tracestate}, {@code baggage}) as a small
 * immutable, serializable value: what travels beside the arguments of every actor call and every engine
 * request so that the callee's spans become children of the caller's.
 *
 * <p>A carrier with a malformed or missing {@code traceparent} extracts to a context with no parent span,
 * so the callee starts a new root rather than failing.
 */
public final class TraceCarrier implements Serializable {
  private static final long serialVersionUID = 1L;

  /**
   * The counter of carriers that came with a {@code traceparent} no valid span context could be read from
   * (the receiver then starts a new trace): counted by each receiving process, and logged once per process.
   */
  public static final String MALFORMED_METRIC = "rl.context.malformed_carriers";

  /**
   * The environment variable the driver gives each actor it creates during a run's start-up: the {@code traceparent}
   * of that role's {@code rl.run.actors.<role>} span, under which the actor's constructor opens its start-up span (the
   * cross-language contract's {@code environment.startup_traceparent}).
   */
  public static final String STARTUP_ENV = "RAVEL_STARTUP_TRACEPARENT";

  /** Carries nothing: the receiver starts a new trace. */
  public static final TraceCarrier EMPTY = new TraceCarrier("", "", "");

  private static final TextMapPropagator PROPAGATOR = TextMapPropagator.composite(
      W3CTraceContextPropagator.getInstance(), W3CBaggagePropagator.getInstance());

  /** Reads the three fields directly: resuming a carrier builds no map. */
  private static final TextMapGetter<TraceCarrier> GETTER = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(TraceCarrier carrier) {
      return carrier.toHeaders().keySet();
    }

    @Override
    public String get(TraceCarrier carrier, String key) {
      if (carrier == null || key == null) {
        return null;
      }
      String v = switch (key) {
        case TRACEPARENT -> carrier.traceparent;
        case TRACESTATE -> carrier.tracestate;
        case BAGGAGE -> carrier.baggage;
        default -> "";
      };
      return v.isEmpty() ? null : v;
    }
  };

  private static final String TRACEPARENT = "traceparent";
  private static final String TRACESTATE = "tracestate";
  private static final String BAGGAGE = "baggage";

  private final String traceparent;
  private final String tracestate;
  private final String baggage;

  private TraceCarrier(String traceparent, String tracestate, String baggage) {
    this.traceparent = traceparent;
    this.tracestate = tracestate;
    this.baggage = baggage;
  }

  /** A carrier from raw header values; {@code null} counts as absent. */
  public static TraceCarrier of(String traceparent, String tracestate, String baggage) {
    return new TraceCarrier(nz(traceparent), nz(tracestate), nz(baggage));
  }

  /** The context current on this thread. */
  public static TraceCarrier current() {
    return capture(Context.current());
  }

  /** The given context's span context and baggage. */
  public static TraceCarrier capture(Context context) {
    String[] h = new String[3];
    PROPAGATOR.inject(context, h, (fields, key, value) -> {
      switch (key) {
        case TRACEPARENT -> fields[0] = value;
        case TRACESTATE -> fields[1] = value;
        case BAGGAGE -> fields[2] = value;
        default -> { } // the composite propagator writes only these
      }
    });
    if (h[0] == null && h[1] == null && h[2] == null) {
      return EMPTY;
    }
    return of(h[0], h[1], h[2]);
  }

  /**
   * The context the {@code traceparent} in the environment variable {@code name} describes, or null when the variable
   * is absent or holds no valid span context (a process that was not given one).
   *
   * @param env the process's environment
   * @param name the variable, for example {@link #STARTUP_ENV}
   * @return the context, with that span as the (remote) parent; null when there is none
   */
  public static Context fromEnvironment(Map<String, String> env, String name) {
    String value = env.get(name);
    if (value == null || value.isBlank()) {
      return null;
    }
    Context c = of(value.strip(), "", "").extract();
    return io.opentelemetry.api.trace.Span.fromContext(c).getSpanContext().isValid() ? c : null;
  }

  /** The context this carrier describes, on top of the root context (a new root if it is malformed). */
  public Context extract() {
    return extract(Context.root());
  }

  /** The context this carrier describes, on top of {@code base}. */
  public Context extract(Context base) {
    return PROPAGATOR.extract(base, this, GETTER);
  }

  /** The non-empty values as HTTP headers ({@code traceparent}, {@code tracestate}, {@code baggage}). */
  public Map<String, String> toHeaders() {
    Map<String, String> m = new LinkedHashMap<>();
    if (!traceparent.isEmpty()) {
      m.put("traceparent", traceparent);
    }
    if (!tracestate.isEmpty()) {
      m.put("tracestate", tracestate);
    }
    if (!baggage.isEmpty()) {
      m.put("baggage", baggage);
    }
    return m;
  }

  public String traceparent() {
    return traceparent;
  }

  public String tracestate() {
    return tracestate;
  }

  public String baggage() {
    return baggage;
  }

  public boolean isEmpty() {
    return traceparent.isEmpty();
  }

  private static String nz(String s) {
    return s == null ? "" : s;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TraceCarrier c && traceparent.equals(c.traceparent) && tracestate.equals(c.tracestate)
        && baggage.equals(c.baggage);
  }

  @Override
  public int hashCode() {
    return Objects.hash(traceparent, tracestate, baggage);
  }

  @Override
  public String toString() {
    return "TraceCarrier{" + (isEmpty() ? "empty" : traceparent) + "}";
  }
}
