package dev.ravel.telemetry.view;

import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.SpanRecord;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * All spans of one run, read as steps: one {@link StepView} per trace whose root is {@code rl.grpo.step}
 * (docs/design.md: one trace per step), and, apart, the spans that fit in no step's tree, so gaps in the traces
 * stay visible. Immutable; the order of the input spans does not matter.
 *
 * <pre>{@code
 * RunView run = RunView.of(RunTraces.readDir(dir).spans());
 * run.step(3).ifPresent(s -> System.out.println(new TerminalWaterfall().render(s, 120, false)));
 * }</pre>
 */
public final class RunView {
  static final String STEP_ROOT = SpanNames.GRPO_STEP;

  /** Input order: trace, start, end, span id, name, source (so equal inputs in any order give equal views). */
  private static final Comparator<SpanRecord> CANONICAL = Comparator.comparing(SpanRecord::traceId)
      .thenComparingLong(SpanRecord::startNanos).thenComparingLong(SpanRecord::endNanos)
      .thenComparing(SpanRecord::spanId).thenComparing(SpanRecord::name).thenComparing(SpanRecord::parentSpanId)
      .thenComparing(s -> String.valueOf(s.source()));

  private final List<SpanRecord> spans;
  private final List<StepView> steps;
  private final List<StepView> startups;
  private final List<StepView> otherTraces;
  private final List<SpanRecord> unconnected;
  private final Map<SpanRecord, String> reasons;
  private final Map<String, Map<String, SpanRecord>> index;
  private final Map<String, Long> stepOfTrace;
  private final String runId;
  private final long startNanos;
  private final Set<String> processes;
  private final int errors;

  private RunView(List<SpanRecord> input) {
    List<SpanRecord> all = new ArrayList<>(input);
    all.sort(CANONICAL);
    this.spans = List.copyOf(all);

    // index by trace and span id; a repeated (trace, span id) keeps the first and counts as unconnected
    Map<String, Map<String, SpanRecord>> byTrace = new TreeMap<>();
    Map<SpanRecord, String> why = new IdentityHashMap<>();
    for (SpanRecord s : all) {
      Map<String, SpanRecord> t = byTrace.computeIfAbsent(s.traceId(), k -> new LinkedHashMap<>());
      if (t.putIfAbsent(s.spanId(), s) != null) {
        why.put(s, "duplicate span id " + s.spanId());
      }
    }
    this.index = byTrace;

    // step roots first (their numbers are needed to resolve links), then the trees
    List<SpanRecord> roots = new ArrayList<>();
    Map<String, Long> traceStep = new HashMap<>();
    for (Map<String, SpanRecord> t : byTrace.values()) {
      for (SpanRecord s : t.values()) {
        if (s.isRoot() && s.name().equals(STEP_ROOT)) {
          roots.add(s);
          traceStep.putIfAbsent(s.traceId(), stepNumber(s));
        }
      }
    }
    this.stepOfTrace = traceStep;
    List<StepView> built = new ArrayList<>();
    Set<SpanRecord> reached = Collections.newSetFromMap(new IdentityHashMap<>());
    for (SpanRecord r : roots) {
      Map<String, List<SpanRecord>> childrenOf = new HashMap<>();
      for (SpanRecord s : byTrace.get(r.traceId()).values()) {
        if (!s.isRoot()) {
          childrenOf.computeIfAbsent(StepView.key(s.traceId(), s.parentSpanId()), k -> new ArrayList<>()).add(s);
        }
      }
      StepView v = new StepView(r, stepNumber(r), childrenOf, this::span, this::stepOfTrace);
      v.nodes().forEach(n -> reached.add(n.span()));
      built.add(v);
    }
    built.sort(Comparator.comparingLong(StepView::step).thenComparingLong(StepView::startNanos)
        .thenComparing(StepView::traceId));
    this.steps = List.copyOf(built);

    // the run's start-ups: each rl.run.startup tree, with the servers' own start-up traces of its window under the
    // worker that launched them
    Set<String> startupTraces = new HashSet<>();
    this.startups = startups(byTrace, traceStep, reached, startupTraces);

    // every other root (a trace of a user's actors, a tool's): its tree, drawn like a step's
    List<StepView> others = new ArrayList<>();
    for (Map<String, SpanRecord> t : byTrace.values()) {
      SpanRecord any = t.values().iterator().next();
      if (traceStep.containsKey(any.traceId()) || startupTraces.contains(any.traceId())) {
        continue;
      }
      Map<String, List<SpanRecord>> childrenOf = new HashMap<>();
      for (SpanRecord s : t.values()) {
        if (!s.isRoot()) {
          childrenOf.computeIfAbsent(StepView.key(s.traceId(), s.parentSpanId()), k -> new ArrayList<>()).add(s);
        }
      }
      for (SpanRecord s : t.values()) {
        if (s.isRoot()) {
          others.add(new StepView(s, -1, childrenOf, this::span, this::stepOfTrace));
        }
      }
    }
    others.sort(Comparator.comparingLong(StepView::startNanos).thenComparing(StepView::traceId));
    this.otherTraces = List.copyOf(others);

    List<SpanRecord> loose = new ArrayList<>();
    for (SpanRecord s : all) {
      if (!reached.contains(s)) {
        loose.add(s);
        why.computeIfAbsent(s, this::reason);
      }
    }
    loose.sort(Comparator.comparingLong(SpanRecord::startNanos).thenComparing(CANONICAL));
    this.unconnected = List.copyOf(loose);
    this.reasons = why;

    Map<String, Integer> runIds = new TreeMap<>();
    Set<String> procs = new TreeSet<>();
    int errs = 0;
    long start = Long.MAX_VALUE;
    for (SpanRecord s : all) {
      if (!s.runId().isEmpty()) {
        runIds.merge(s.runId(), 1, Integer::sum);
      }
      procs.add(s.process());
      if (s.isError()) {
        errs++;
      }
      start = Math.min(start, s.startNanos());
    }
    this.runId = runIds.entrySet().stream().max(Map.Entry.<String, Integer>comparingByValue()
        .thenComparing(Map.Entry.comparingByKey(Comparator.reverseOrder()))).map(Map.Entry::getKey).orElse("");
    this.processes = Collections.unmodifiableSet(procs);
    this.errors = errs;
    this.startNanos = all.isEmpty() ? 0 : start;
  }

  /**
   * The attribute a span placed in a start-up's tree by the view carries (an inference server's start-up root that
   * has no parent of Ravel's): how its launching worker was found, {@value #PLACED_BY_PID} or
   * {@value #PLACED_BY_TIME}. Only in the views: the run's span records are what the processes exported.
   */
  public static final String PLACED_BY = "rl.view.placed_by";
  /** Placed under the worker whose {@code process.pid} the server's resource names as its {@code process.parent_pid}. */
  public static final String PLACED_BY_PID = "process.parent_pid";
  /** Placed by time: under the launch (or backend start) span whose interval holds the server's start. */
  public static final String PLACED_BY_TIME = "time window";

  private List<StepView> startups(Map<String, Map<String, SpanRecord>> byTrace, Map<String, Long> traceStep,
      Set<SpanRecord> reached, Set<String> used) {
    List<SpanRecord> roots = new ArrayList<>();
    List<List<SpanRecord>> servers = new ArrayList<>();
    for (Map<String, SpanRecord> t : byTrace.values()) {
      List<SpanRecord> in = List.copyOf(t.values());
      if (traceStep.containsKey(in.get(0).traceId())) {
        continue;
      }
      in.stream().filter(x -> x.isRoot() && x.name().equals(SpanNames.RUN_STARTUP)).forEach(roots::add);
      if (dev.ravel.telemetry.traces.TraceQuality.isServerStartupTrace(in)) {
        servers.add(in);
      }
    }
    roots.sort(Comparator.comparingLong(SpanRecord::startNanos).thenComparing(SpanRecord::traceId));
    List<StepView> out = new ArrayList<>();
    Set<String> placed = new HashSet<>();
    for (SpanRecord root : roots) {
      Map<String, SpanRecord> trace = byTrace.get(root.traceId());
      Map<String, List<SpanRecord>> childrenOf = new HashMap<>();
      for (SpanRecord x : trace.values()) {
        if (!x.isRoot()) {
          childrenOf.computeIfAbsent(StepView.key(x.traceId(), x.parentSpanId()), k -> new ArrayList<>()).add(x);
        }
      }
      List<SpanRecord> launchSpans = trace.values().stream()
          .filter(x -> x.name().equals(SpanNames.WORKER_LAUNCH_SERVER)).toList();
      List<SpanRecord> launches = !launchSpans.isEmpty() ? launchSpans
          : trace.values().stream().filter(x -> x.name().equals(SpanNames.WORKER_START_BACKEND)).toList();
      Map<SpanRecord, SpanRecord> copies = new IdentityHashMap<>();
      for (List<SpanRecord> server : servers) {
        String id = server.get(0).traceId();
        long start = server.stream().filter(SpanRecord::isRoot).mapToLong(SpanRecord::startNanos).min().orElse(0);
        if (placed.contains(id) || start < root.startNanos() || start > Math.max(root.startNanos(), root.endNanos())) {
          continue;
        }
        placed.add(id);
        for (SpanRecord x : server) {
          if (!x.isRoot()) {
            childrenOf.computeIfAbsent(StepView.key(x.traceId(), x.parentSpanId()), k -> new ArrayList<>()).add(x);
            continue;
          }
          Object parentPid = x.resourceAttribute(RavelAttributes.PROCESS_PARENT_PID);
          Optional<SpanRecord> byPid = parentPid == null ? Optional.empty() : launches.stream()
              .filter(l -> String.valueOf(parentPid).equals(String.valueOf(l.resourceAttribute(
                  RavelAttributes.PROCESS_PID)))).min(Comparator.comparingLong(SpanRecord::startNanos));
          SpanRecord under = byPid.orElseGet(() -> launches.stream()
              .filter(l -> l.startNanos() <= x.startNanos() && x.startNanos() <= l.endNanos())
              .max(Comparator.comparingLong(SpanRecord::startNanos)).orElse(root));
          Map<String, Object> attrs = new TreeMap<>(x.attributes());
          attrs.put(PLACED_BY, byPid.isPresent() ? PLACED_BY_PID : PLACED_BY_TIME);
          SpanRecord copy = new SpanRecord(x.traceId(), x.spanId(), under.spanId(), x.name(), x.kind(), x.startNanos(),
              x.endNanos(), x.statusCode(), x.statusMessage(), attrs, x.resource(), x.events(), x.links(), x.source());
          copies.put(copy, x);
          childrenOf.computeIfAbsent(StepView.key(under.traceId(), under.spanId()), k -> new ArrayList<>()).add(copy);
        }
        used.add(id);
      }
      StepView v = new StepView(root, -1, childrenOf, this::span, this::stepOfTrace);
      v.nodes().forEach(n -> reached.add(copies.getOrDefault(n.span(), n.span())));
      used.add(root.traceId());
      out.add(v);
    }
    return List.copyOf(out);
  }

  /** The view of one run's spans (from {@code RunTraces.readDir(...).spans()} or a backend). */
  public static RunView of(List<SpanRecord> spans) {
    return new RunView(spans);
  }

  private static long stepNumber(SpanRecord root) {
    return StepView.number(root.attribute(RavelAttributes.STEP)).orElse(-1);
  }

  private String reason(SpanRecord s) {
    if (!stepOfTrace.containsKey(s.traceId())) {
      return "trace has no " + STEP_ROOT + " root";
    }
    Map<String, SpanRecord> trace = index.get(s.traceId());
    SpanRecord cur = s;
    Set<String> seen = new HashSet<>();
    while (!cur.isRoot()) {
      if (!seen.add(cur.spanId())) {
        return "parent cycle";
      }
      SpanRecord parent = trace.get(cur.parentSpanId());
      if (parent == null) {
        return "missing parent " + cur.parentSpanId();
      }
      cur = parent;
    }
    return cur == s ? "second root " + s.name() + " in a step trace" : "under root " + cur.name();
  }

  // ---------------------------------------------------------------- API

  /**
   * The trees of the run's other traces: one per root span of a trace without an {@code rl.grpo.step} root (your
   * own actors' calls, for example), by start time, less the run's start-ups ({@link #startups()}). Their spans
   * still count as {@link #unconnected} to steps.
   */
  public List<StepView> otherTraces() {
    return otherTraces;
  }

  /**
   * The run's start-ups, by start time (one, or one per process of a resumed run): each the tree of an
   * {@code rl.run.startup} root (docs/design.md, "Span placement"), and, placed in it, the inference servers' own
   * start-up traces that began in its window and have no parent of Ravel's (vLLM's model loading, exported as roots
   * of their own), each root under the worker that launched it ({@value #PLACED_BY}). Neither is among
   * {@link #otherTraces()} or {@link #unconnected()}.
   */
  public List<StepView> startups() {
    return startups;
  }

  /** The steps, by step number ({@code rl.step}), then start time. */
  public List<StepView> steps() {
    return steps;
  }

  /** The step with number {@code n} (the first by start time should a number repeat). */
  public Optional<StepView> step(long n) {
    return steps.stream().filter(s -> s.step() == n).findFirst();
  }

  /**
   * The spans that are in no step's tree nor a start-up's ({@link #startups()}): spans of other traces without an
   * {@code rl.grpo.step} root, spans whose chain of parents is broken (a parent id not among the trace's spans), and
   * repeated span ids. By start time.
   */
  public List<SpanRecord> unconnected() {
    return unconnected;
  }

  /** Why a span of {@link #unconnected()} is there (for example {@code missing parent 00f1...}); empty if it is not. */
  String unconnectedReason(SpanRecord s) {
    return reasons.getOrDefault(s, "");
  }

  /** Every span of the run, ordered by trace id, then start time. */
  public List<SpanRecord> spans() {
    return spans;
  }

  /** The span with these ids, if it is among the run's spans. */
  public Optional<SpanRecord> span(String traceId, String spanId) {
    Map<String, SpanRecord> t = index.get(traceId);
    return Optional.ofNullable(t == null ? null : t.get(spanId));
  }

  /** The number of the step whose trace has this id, if any. */
  public OptionalLong stepOfTrace(String traceId) {
    Long n = stepOfTrace.get(traceId);
    return n == null ? OptionalLong.empty() : OptionalLong.of(n);
  }

  /** The run id: the {@code rl.run.id} most spans' resources carry; empty when none does. */
  public String runId() {
    return runId;
  }

  /** The earliest span start, epoch nanoseconds (0 for no spans). */
  public long startNanos() {
    return startNanos;
  }

  /** {@link #startNanos()} as an instant. */
  public Instant start() {
    return Instant.ofEpochSecond(Math.floorDiv(startNanos, 1_000_000_000L), Math.floorMod(startNanos, 1_000_000_000L));
  }

  /** The processes ({@link SpanRecord#process()}, role/pid) that emitted the run's spans, sorted. */
  public Set<String> processes() {
    return processes;
  }

  /** The number of the run's spans with error status, unconnected ones included. */
  public int errorCount() {
    return errors;
  }

  @Override
  public String toString() {
    return "RunView[run=" + runId + ", steps=" + steps.size() + ", spans=" + spans.size() + ", unconnected="
        + unconnected.size() + "]";
  }
}
