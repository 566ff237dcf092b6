package dev.ravel.driver.grpo;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A run's start-up as one trace of its own (docs/design.md, "Span placement"): the root {@code rl.run.startup}, from
 * the session's start (or, on a session that ran a run before, this run's) to just before the first step; Ray's
 * start-up ({@code rl.run.ray}, from the session's own record); and one {@code rl.run.actors.<role>} per role, which the
 * actors' constructors parent their own start-up spans on ({@link TraceCarrier#STARTUP_ENV} in their environment).
 * While the start-up runs, its root is the current context, so that the actor calls it makes nest under it.
 *
 * <p>Telemetry never fails a run: every method catches what tracing throws and logs it. With the {@code step} span
 * group off there is no start-up trace, and no actor is given a parent.
 */
final class StartupTrace {
  private static final Logger LOG = LoggerFactory.getLogger(StartupTrace.class);
  private static final StartupTrace NONE = new StartupTrace(null, null);

  private final Tracer tracer;
  /** Null when there is no start-up trace. */
  private final Span root;
  private boolean ended;

  private StartupTrace(Tracer tracer, Span root) {
    this.tracer = tracer;
    this.root = root;
  }

  /** No start-up trace (actors built by hand, tests). */
  static StartupTrace none() {
    return NONE;
  }

  /**
   * Opens the start-up trace of a run on {@code spans}: from {@code session}'s start with its Ray start-up when
   * present (the session's first run), from now otherwise; linked to {@code jobRun} (a submitted run's job span)
   * as a step is.
   */
  static StartupTrace open(Spans spans, Optional<DriverSession.Startup> session, SpanContext jobRun) {
    if (!spans.isOn(SpanGroup.STEP)) {
      return NONE;
    }
    try {
      Tracer tracer = spans.tracer();
      var b = tracer.spanBuilder(SpanNames.RUN_STARTUP).setNoParent();
      if (jobRun != null && jobRun.isValid()) {
        b.addLink(jobRun);
      }
      session.ifPresent(s -> b.setStartTimestamp(s.sessionStartNanos(), TimeUnit.NANOSECONDS));
      Span root = b.startSpan();
      session.ifPresent(s -> tracer.spanBuilder(SpanNames.RUN_RAY).setParent(Context.root().with(root))
          .setStartTimestamp(s.rayStartNanos(), TimeUnit.NANOSECONDS)
          .setAttribute(RavelAttributes.RAY_HEAD_STARTED, s.headStarted()).startSpan()
          .end(Math.max(s.rayStartNanos(), s.rayReadyNanos()), TimeUnit.NANOSECONDS));
      return new StartupTrace(tracer, root);
    } catch (RuntimeException e) {
      LOG.warn("the run's start-up is not traced: {}", e.toString());
      return NONE;
    }
  }

  /** {@return the context the start-up runs in: its root's, or the current one when there is no start-up trace} */
  Context context() {
    return root == null ? Context.current() : Context.root().with(root);
  }

  /**
   * Starts the span of one role's actors ({@code rl.run.actors.<role>}) now, under the root.
   *
   * @param role the actors' role, as the run names them ({@code generation_worker}, {@code policy_trainer}, ...)
   * @param count how many actors of the role the run creates
   */
  Role role(String role, int count) {
    if (root == null) {
      return Role.NONE;
    }
    try {
      Span s = tracer.spanBuilder(SpanNames.runActors(role)).setParent(Context.root().with(root))
          .setAttribute(RavelAttributes.ACTOR_ROLE, role).setAttribute(RavelAttributes.ACTOR_COUNT, (long) count)
          .startSpan();
      return new Role(s);
    } catch (RuntimeException e) {
      LOG.warn("the start-up of the {} actors is not traced: {}", role, e.toString());
      return Role.NONE;
    }
  }

  /** Ends the start-up (just before the first step), failed with {@code failure} when it is not null. Idempotent. */
  void end(Throwable failure) {
    if (root == null || ended) {
      return;
    }
    ended = true;
    try {
      if (failure != null) {
        root.recordException(failure);
        root.setStatus(StatusCode.ERROR, String.valueOf(failure.getMessage()));
      }
      root.end();
    } catch (RuntimeException e) {
      LOG.warn("the run's start-up span did not end: {}", e.toString());
    }
  }

  /** The span of one role's actors, from their creation until the last one answered. */
  static final class Role {
    static final Role NONE = new Role(null);

    private final Span span;
    private long readyNanos = Long.MIN_VALUE;
    private boolean ended;

    private Role(Span span) {
      this.span = span;
    }

    /**
     * {@return this span's {@code traceparent}: the value of {@link TraceCarrier#STARTUP_ENV} that makes it the parent
     * of an actor's start-up spans; empty when there is no start-up trace}
     */
    Optional<String> traceparent() {
      if (span == null) {
        return Optional.empty();
      }
      try {
        String tp = TraceCarrier.capture(Context.root().with(span)).traceparent();
        return tp.isEmpty() ? Optional.empty() : Optional.of(tp);
      } catch (RuntimeException e) {
        return Optional.empty();
      }
    }

    /** One of the role's actors answered at {@code epochNanos}. */
    synchronized void ready(long epochNanos) {
      readyNanos = Math.max(readyNanos, epochNanos);
    }

    /**
     * Ends the span when its last actor answered (now when none did), failed with {@code failure} when it is not
     * null. Idempotent.
     */
    synchronized void end(Throwable failure) {
      if (span == null || ended) {
        return;
      }
      ended = true;
      try {
        if (failure != null) {
          span.recordException(failure);
          span.setStatus(StatusCode.ERROR, String.valueOf(failure.getMessage()));
        }
        if (readyNanos == Long.MIN_VALUE || failure != null) {
          span.end();
        } else {
          span.end(readyNanos, TimeUnit.NANOSECONDS);
        }
      } catch (RuntimeException e) {
        LOG.warn("an rl.run.actors span did not end: {}", e.toString());
      }
    }
  }
}
