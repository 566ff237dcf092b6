package dev.ravel.driver.jobs;

import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The trace context that {@code ravel submit run} hands to the job it submits, through the job's environment:
 * the submitter's {@code rl.job.submit} span as {@code RAVEL_PARENT_TRACEPARENT} /
 * {@code RAVEL_PARENT_TRACESTATE} (W3C values), and the submission id as {@code RAVEL_JOB_SUBMISSION_ID}.
 * In the job, {@code ravel run} opens {@code rl.job.run} under that parent:
 * <pre>{@code
 * steps = JobContext.runInJobSpan(session.spans(), System.getenv(), run::run);
 * }</pre>
 */
public final class JobContext {
  /** The parent span's W3C {@code traceparent}. */
  public static final String TRACEPARENT_ENV = "RAVEL_PARENT_TRACEPARENT";
  /** The parent span's W3C {@code tracestate} (often empty). */
  public static final String TRACESTATE_ENV = "RAVEL_PARENT_TRACESTATE";
  /** The Ray submission id of the job this process runs in. */
  public static final String SUBMISSION_ID_ENV = "RAVEL_JOB_SUBMISSION_ID";
  private JobContext() {}

  /** The parent carrier read from {@code env}; {@link TraceCarrier#EMPTY} when the variables are absent. */
  public static TraceCarrier parent(Map<String, String> env) {
    String tp = env.get(TRACEPARENT_ENV);
    if (tp == null || tp.isBlank()) {
      return TraceCarrier.EMPTY;
    }
    return TraceCarrier.of(tp.strip(), env.getOrDefault(TRACESTATE_ENV, ""), "");
  }

  /** Whether {@code env} carries a parent (this process runs as a job that {@code ravel submit} traced). */
  public static boolean present(Map<String, String> env) {
    return !parent(env).isEmpty();
  }

  /** The variables that carry {@code carrier} into a job's environment (none for an empty carrier). */
  public static Map<String, String> toEnvironment(TraceCarrier carrier) {
    Objects.requireNonNull(carrier, "carrier");
    Map<String, String> env = new LinkedHashMap<>();
    if (!carrier.isEmpty()) {
      env.put(TRACEPARENT_ENV, carrier.traceparent());
      env.put(TRACESTATE_ENV, carrier.tracestate());
    }
    return env;
  }

  /**
   * Runs {@code body} inside {@code rl.job.run} (group {@link SpanGroup#JOB}) as a child of the parent that
   * {@code env} carries; an exception marks the span failed and is rethrown. Without a parent in
   * {@code env}, runs {@code body} with no span. The span ends before this returns, so a caller that
   * closes its telemetry afterwards exports it.
   */
  public static <T> T runInJobSpan(Spans spans, Map<String, String> env, Supplier<T> body) {
    Objects.requireNonNull(spans, "spans");
    Objects.requireNonNull(body, "body");
    TraceCarrier parent = parent(env);
    if (parent.isEmpty()) {
      return body.get();
    }
    try (ScopedSpan s = spans.start(SpanGroup.JOB, SpanNames.JOB_RUN, parent.extract())) {
      String id = env.get(SUBMISSION_ID_ENV);
      if (id != null && !id.isEmpty()) {
        s.set(RavelAttributes.JOB_SUBMISSION_ID, id);
      }
      try {
        return body.get();
      } catch (RuntimeException | Error e) {
        s.error(e);
        throw e;
      }
    }
  }
}
