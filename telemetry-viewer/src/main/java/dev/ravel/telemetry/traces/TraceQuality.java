package dev.ravel.telemetry.traces;

import dev.ravel.telemetry.spans.SpanNames;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The two measures docs/design.md ("Span placement") sets targets for, computed from a run's spans:
 * <ul>
 *   <li><b>generation coverage</b>: the share of engine requests ({@code llm_request}) that have an
 *       {@code rl.vllm.generate} ancestor in the same trace;</li>
 *   <li><b>connectedness</b>: the share of spans from worker processes (every role but {@code driver} and
 *       {@code submitter}),
 *       engine spans included, whose chain of parents reaches a {@code rl.grpo.step} root in the same
 *       trace without a missing link.</li>
 * </ul>
 * The run's start-up is in no step: the spans of its own trace ({@code rl.run.startup}, {@link #runStartupSpans()})
 * and an inference server's own start-up traces ({@link #serverStartupSpans()}) are left out of connectedness.
 * A figure over no spans at all is not 100%: each figure is empty when there is nothing to measure, so a
 * check that asserts it (AssertJ's {@code hasValue(1.0)}) fails when the spans it is about were never
 * exported, instead of passing vacuously. {@link #engineRequests()} and {@link #workerSpans()} give the
 * spans each figure is computed over, for checks of their number.
 */
public final class TraceQuality {
  private static final int MAX_DEPTH = 256;

  private final List<SpanRecord> spans;
  private final Map<String, SpanRecord> byId;
  /** The traces of a server's own start-up ({@link #isServerStartupTrace}). */
  private final Set<String> serverStartup;
  /** The traces of the run's start-up: those with an {@code rl.run.startup} root. */
  private final Set<String> runStartup;

  private TraceQuality(List<SpanRecord> spans) {
    this.spans = spans;
    this.byId = spans.stream().collect(java.util.stream.Collectors.toMap(s -> s.traceId() + s.spanId(), s -> s, (a, b) -> a));
    Map<String, List<SpanRecord>> byTrace = spans.stream().collect(java.util.stream.Collectors.groupingBy(
        SpanRecord::traceId));
    Set<String> server = new java.util.HashSet<>();
    Set<String> run = new java.util.HashSet<>();
    byTrace.forEach((trace, in) -> {
      if (isServerStartupTrace(in)) {
        server.add(trace);
      }
      if (in.stream().anyMatch(s -> s.isRoot() && s.name().equals(SpanNames.RUN_STARTUP))) {
        run.add(trace);
      }
    });
    this.serverStartup = Set.copyOf(server);
    this.runStartup = Set.copyOf(run);
  }

  public static TraceQuality of(List<SpanRecord> spans) {
    return new TraceQuality(List.copyOf(spans));
  }

  /** The engine requests ({@code llm_request} spans), what {@link #generationCoverage()} is computed over. */
  public List<SpanRecord> engineRequests() {
    return spans.stream().filter(s -> s.name().equals(SpanNames.LLM_REQUEST)).toList();
  }

  /**
   * Engine requests with an {@code rl.vllm.generate} ancestor / engine requests; empty when there are no engine
   * requests (nothing was measured).
   */
  public OptionalDouble generationCoverage() {
    List<SpanRecord> engine = engineRequests();
    if (engine.isEmpty()) {
      return OptionalDouble.empty();
    }
    long covered = engine.stream().filter(s -> hasAncestor(s, a -> a.name().equals(SpanNames.VLLM_GENERATE))).count();
    return OptionalDouble.of((double) covered / engine.size());
  }

  /**
   * Worker-process spans connected to a step root / worker-process spans; empty when there are no worker-process
   * spans (nothing was measured).
   */
  public OptionalDouble connectedness() {
    List<SpanRecord> worker = workerSpans();
    if (worker.isEmpty()) {
      return OptionalDouble.empty();
    }
    return OptionalDouble.of((double) worker.stream().filter(this::connected).count() / worker.size());
  }

  /**
   * Spans from worker processes: every role but the driver's and the job submitter's, less the run's start-up (its
   * own trace, {@link #runStartupSpans()}, and an inference server's own, {@link #serverStartupSpans()}), which no
   * step caused.
   */
  public List<SpanRecord> workerSpans() {
    return spans.stream().filter(s -> !s.role().equals("driver") && !s.role().equals("submitter"))
        .filter(s -> !serverStartup.contains(s.traceId()) && !runStartup.contains(s.traceId())).toList();
  }

  /**
   * An inference server's own start-up, traced by the server itself (vLLM's model loading: {@code Overall Loading},
   * {@code Load weights}, ...): the spans of traces that hold nothing but a server's spans under a root that is not
   * Ravel's ({@code rl.*}) and no engine request ({@code llm_request}), and a server's spans in the run's start-up
   * trace should one parent them there. They belong to the run, not to any step.
   */
  public List<SpanRecord> serverStartupSpans() {
    return spans.stream().filter(s -> serverStartup.contains(s.traceId())
        || (runStartup.contains(s.traceId()) && s.role().equals(SERVER_ROLE))).toList();
  }

  /** The spans of the run's start-up trace ({@code rl.run.startup} and everything under it, in its trace). */
  public List<SpanRecord> runStartupSpans() {
    return spans.stream().filter(s -> runStartup.contains(s.traceId())).toList();
  }

  /**
   * Whether the spans of one trace are a server's own start-up: nothing but an inference server's spans, a root that
   * is not Ravel's ({@code rl.*}), and no engine request (one alone in its trace is a context that did not
   * propagate, never start-up).
   *
   * @param trace the spans of one trace
   * @return whether they are a server's start-up
   */
  public static boolean isServerStartupTrace(List<SpanRecord> trace) {
    boolean serverOnly = !trace.isEmpty() && trace.stream().allMatch(s -> s.role().equals(SERVER_ROLE));
    boolean foreignRoot = trace.stream().filter(SpanRecord::isRoot).anyMatch(s -> !s.name().startsWith("rl."));
    boolean requests = trace.stream().anyMatch(s -> s.name().equals(SpanNames.LLM_REQUEST));
    return serverOnly && foreignRoot && !requests;
  }

  /** The role of an inference server's spans ({@code ravel serve}'s, and a launched vLLM's as the run receives them). */
  static final String SERVER_ROLE = "inference_server";

  /**
   * The worker-process spans that do not reach a step root. An empty list says nothing unless
   * {@link #workerSpans()} is not: check {@link #connectedness()} or that count too.
   */
  public List<SpanRecord> disconnected() {
    return workerSpans().stream().filter(s -> !connected(s)).toList();
  }

  /** Whether {@code s}'s parents lead, link by link, to a {@code rl.grpo.step} root. */
  public boolean connected(SpanRecord s) {
    SpanRecord cur = s;
    for (int i = 0; i < MAX_DEPTH; i++) {
      if (cur.isRoot()) {
        return cur.name().equals(SpanNames.GRPO_STEP);
      }
      SpanRecord parent = byId.get(cur.traceId() + cur.parentSpanId());
      if (parent == null) {
        return false;
      }
      cur = parent;
    }
    return false;
  }

  /** Whether some ancestor of {@code s} in its trace satisfies {@code p}. */
  public boolean hasAncestor(SpanRecord s, Predicate<SpanRecord> p) {
    SpanRecord cur = s;
    for (int i = 0; i < MAX_DEPTH && !cur.isRoot(); i++) {
      SpanRecord parent = byId.get(cur.traceId() + cur.parentSpanId());
      if (parent == null) {
        return false;
      }
      if (p.test(parent)) {
        return true;
      }
      cur = parent;
    }
    return false;
  }

  /** The parent of {@code s}, if present. */
  public java.util.Optional<SpanRecord> parent(SpanRecord s) {
    return java.util.Optional.ofNullable(byId.get(s.traceId() + s.parentSpanId()));
  }
}
