package dev.ravel.telemetry.view;

import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * One training step: the trace whose root is {@code rl.grpo.step}, as a tree of {@link SpanNode}s, with the
 * measures a person reads off a waterfall: duration, phase split, {@link Goodput}, critical path and the
 * rollouts the step consumed. Built by {@link RunView}; immutable.
 *
 * <p>The tree holds the spans reachable from the root by parent ids within the same trace. Spans of the trace
 * that are not reachable (missing parent, duplicate span id) are not in it; {@link RunView#unconnected()} lists
 * them.
 */
public final class StepView {
  /** The name given to a consumed rollout whose linked span is not among the run's spans. */
  public static final String MISSING_SPAN_NAME = "(missing span)";

  static final String MISSING_SOURCE = "ravel-view:missing-link";

  /** Children order: start time, then end time, name, span id. */
  static final Comparator<SpanRecord> ORDER = Comparator.comparingLong(SpanRecord::startNanos)
      .thenComparingLong(SpanRecord::endNanos).thenComparing(SpanRecord::name).thenComparing(SpanRecord::spanId);

  private final long step;
  private final SpanNode root;
  private final List<SpanNode> nodes;
  private final List<SpanNode> criticalPath;
  private final Map<String, Long> phaseNanos;
  private final Goodput goodput;
  private final List<SpanRecord> consumed;
  private final List<Long> consumedFromSteps;
  private final Map<String, Long> consumedTraceSteps;
  private final long traceStart;
  private final long traceEnd;
  private final int depth;
  private final int errors;
  private final List<String> processes;
  private final List<String> services;

  /**
   * @param rootSpan the {@code rl.grpo.step} root
   * @param step the step number
   * @param childrenOf the children of each span, by its {@link #key} (trace and span id): within the root's trace,
   *     and the traces a run's start-up places in it
   * @param resolve a span of the run by trace id and span id
   * @param stepOfTrace the step whose trace has a given trace id
   */
  StepView(SpanRecord rootSpan, long step, Map<String, List<SpanRecord>> childrenOf,
      BiFunction<String, String, Optional<SpanRecord>> resolve, Function<String, OptionalLong> stepOfTrace) {
    this.step = step;
    Builder b = build(rootSpan, 0, childrenOf, new HashSet<>());
    b.effStart = rootSpan.startNanos();
    b.effEnd = Math.max(rootSpan.startNanos(), rootSpan.endNanos());
    markCriticalPath(b);
    this.root = freeze(b);
    List<SpanNode> all = new ArrayList<>();
    preorder(root, all);
    this.nodes = List.copyOf(all);
    this.criticalPath = all.stream().filter(SpanNode::onCriticalPath).toList();
    this.traceStart = all.stream().mapToLong(n -> n.span().startNanos()).min().orElse(rootSpan.startNanos());
    this.traceEnd = Math.max(traceStart,
        all.stream().mapToLong(n -> n.span().endNanos()).max().orElse(rootSpan.endNanos()));
    this.depth = all.stream().mapToInt(SpanNode::depth).max().orElse(0) + 1;
    this.errors = (int) all.stream().filter(n -> n.span().isError()).count();
    Set<String> procs = new LinkedHashSet<>();
    Set<String> svcs = new LinkedHashSet<>();
    for (SpanNode n : all) {
      procs.add(n.span().process());
      svcs.add(n.span().service());
    }
    this.processes = List.copyOf(procs);
    this.services = List.copyOf(svcs);
    this.phaseNanos = phases(root);
    this.goodput = goodput(root, nodes);
    List<SpanRecord> links = new ArrayList<>();
    Set<Long> fromSteps = new TreeSet<>();
    Map<String, Long> traceSteps = new TreeMap<>();
    for (SpanRecord.Link l : rootSpan.links()) {
      Optional<SpanRecord> target = resolve.apply(l.traceId(), l.spanId());
      links.add(target.orElseGet(() -> missing(l)));
      stepOfTrace.apply(l.traceId()).ifPresent(n -> {
        fromSteps.add(n);
        traceSteps.put(l.traceId(), n);
      });
    }
    this.consumed = List.copyOf(links);
    this.consumedFromSteps = List.copyOf(fromSteps);
    this.consumedTraceSteps = Collections.unmodifiableMap(traceSteps);
  }

  // ---------------------------------------------------------------- tree

  private static final class Builder {
    final SpanRecord span;
    final int depth;
    final List<Builder> kids = new ArrayList<>();
    long effStart;
    long effEnd;
    boolean cp;

    Builder(SpanRecord span, int depth) {
      this.span = span;
      this.depth = depth;
    }
  }

  /**
   * A span's key in a tree: its trace and span id (span ids are unique within a trace only: two vLLM servers, which
   * seed the random numbers their span ids come from, export the same ones in their own traces).
   */
  static String key(String traceId, String spanId) {
    return traceId + "/" + spanId;
  }

  private static Builder build(SpanRecord s, int depth, Map<String, List<SpanRecord>> childrenOf,
      Set<String> seen) {
    Builder b = new Builder(s, depth);
    seen.add(key(s.traceId(), s.spanId()));
    List<SpanRecord> kids = new ArrayList<>(childrenOf.getOrDefault(key(s.traceId(), s.spanId()), List.of()));
    if (kids.isEmpty()) {
      kids.addAll(lifecycleOf(s));
    }
    kids.sort(ORDER);
    for (SpanRecord k : kids) {
      if (!seen.contains(key(k.traceId(), k.spanId()))) {
        b.kids.add(build(k, depth + 1, childrenOf, seen));
      }
    }
    return b;
  }

  /** vLLM's own measures of an {@code llm_request}'s stages, in seconds, in the order they tile it. */
  private static final List<Map.Entry<String, String>> VLLM_STAGES = List.of(
      Map.entry("gen_ai.latency.time_in_queue", dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST_QUEUED),
      Map.entry("gen_ai.latency.time_in_model_prefill", dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST_PREFILL),
      Map.entry("gen_ai.latency.time_in_model_decode", dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST_DECODE));
  /** The attribute a stage drawn from an attribute carries: the attribute's name. */
  static final String DRAWN_FROM = "rl.view.drawn_from";

  /**
   * An {@code llm_request} without lifecycle children of its own (vLLM's) drawn with them all the same: its queue,
   * prefill and decode times ({@code gen_ai.latency.*}, seconds) as consecutive children from its start, clipped to
   * its end, each saying which attribute it was drawn from ({@value #DRAWN_FROM}). Only in the views: a run's span
   * records and counts are what the processes exported.
   */
  static List<SpanRecord> lifecycleOf(SpanRecord s) {
    if (!s.name().equals(dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST)) {
      return List.of();
    }
    List<SpanRecord> out = new ArrayList<>();
    long t = s.startNanos();
    long end = Math.max(s.startNanos(), s.endNanos());
    for (Map.Entry<String, String> stage : VLLM_STAGES) {
      if (!(s.attributes().get(stage.getKey()) instanceof Number seconds) || seconds.doubleValue() < 0) {
        return out.isEmpty() ? List.of() : out;
      }
      long to = Math.min(end, t + Math.round(seconds.doubleValue() * 1e9));
      out.add(new SpanRecord(s.traceId(), s.spanId() + "/" + stage.getValue(), s.spanId(), stage.getValue(), 1, t, to,
          0, "", Map.of(DRAWN_FROM, stage.getKey()), s.resource(), List.of(), List.of(), s.source()));
      t = to;
    }
    return out;
  }

  /**
   * Jaeger's rule. Each child's interval is first clipped to its parent's (clipped) interval; a child that lies
   * wholly outside it is left out, with its subtree. Then, from the parent's end, the child that finished last
   * at or before the current point is on the path; it is followed recursively, the current point moves to its
   * start, and the search repeats among the remaining children. Time between those children is the parent's
   * own time on the path.
   */
  private static void markCriticalPath(Builder node) {
    node.cp = true;
    List<Builder> candidates = new ArrayList<>();
    for (Builder k : node.kids) {
      if (k.span.startNanos() <= node.effEnd && k.span.endNanos() >= node.effStart) {
        k.effStart = clamp(k.span.startNanos(), node.effStart, node.effEnd);
        k.effEnd = clamp(Math.max(k.span.startNanos(), k.span.endNanos()), node.effStart, node.effEnd);
        candidates.add(k);
      }
    }
    long t = node.effEnd;
    while (true) {
      Builder best = null;
      for (Builder k : candidates) {
        if (k.effEnd <= t && (best == null || k.effEnd > best.effEnd
            || (k.effEnd == best.effEnd && k.effStart >= best.effStart))) {
          best = k;
        }
      }
      if (best == null) {
        return;
      }
      candidates.remove(best);
      markCriticalPath(best);
      t = Math.min(t, best.effStart);
    }
  }

  private static long clamp(long v, long lo, long hi) {
    return Math.max(lo, Math.min(hi, v));
  }

  private static SpanNode freeze(Builder b) {
    List<SpanNode> kids = new ArrayList<>(b.kids.size());
    for (Builder k : b.kids) {
      kids.add(freeze(k));
    }
    return new SpanNode(b.span, kids, b.depth, b.cp);
  }

  private static void preorder(SpanNode n, List<SpanNode> out) {
    out.add(n);
    for (SpanNode c : n.children()) {
      preorder(c, out);
    }
  }

  // ---------------------------------------------------------------- phases and goodput

  private static Map<String, Long> phases(SpanNode root) {
    SpanRecord r = root.span();
    Map<String, List<long[]>> byKey = new TreeMap<>();
    for (SpanNode c : root.children()) {
      List<long[]> list = byKey.computeIfAbsent(Phases.key(c.name()), k -> new ArrayList<>());
      long[] iv = Intervals.clip(c.span().startNanos(), c.span().endNanos(), r.startNanos(), r.endNanos());
      if (iv != null) {
        list.add(iv);
      }
    }
    Map<String, Long> out = new LinkedHashMap<>();
    for (String k : Phases.sorted(byKey.keySet())) {
      out.put(k, Intervals.unionLength(byKey.get(k)));
    }
    return Collections.unmodifiableMap(out);
  }

  private static Goodput goodput(SpanNode root, List<SpanNode> all) {
    SpanRecord r = root.span();
    long wall = r.durationNanos();
    if (wall <= 0) {
      return Goodput.NONE;
    }
    List<long[]> idle = new ArrayList<>();
    for (SpanNode n : all) {
      if (n != root && Phases.isIdle(n.name())) {
        add(idle, n.span(), r);
      }
    }
    List<long[]> productive = new ArrayList<>();
    List<long[]> generation = new ArrayList<>();
    for (SpanNode c : root.children()) {
      String key = Phases.key(c.name());
      if (Phases.PRODUCTIVE.contains(key)) {
        add(productive, c.span(), r);
      }
      if (key.equals(Phases.GENERATION)) {
        add(generation, c.span(), r);
      }
    }
    long idleN = Intervals.unionLength(idle);
    long prodN = Intervals.unionLength(productive, idle) - idleN;
    long genN = Intervals.unionLength(generation, idle) - idleN;
    long wastedN = 0;
    OptionalLong dropped = number(r.attribute(RavelAttributes.DROPPED_TRAJECTORIES));
    OptionalLong used = number(r.attribute(RavelAttributes.NUM_TRAJECTORIES));
    if (dropped.isPresent() && used.isPresent()) {
      long d = Math.max(0, dropped.getAsLong());
      long u = Math.max(0, used.getAsLong());
      if (d + u > 0) {
        wastedN = Math.min(genN, Math.round(genN * ((double) d / (d + u))));
      }
    }
    long overheadN = Math.max(0, wall - idleN - prodN);
    return Goodput.ofNanos(prodN - wastedN, overheadN, idleN, wastedN, wall);
  }

  private static void add(List<long[]> list, SpanRecord s, SpanRecord root) {
    long[] iv = Intervals.clip(s.startNanos(), s.endNanos(), root.startNanos(), root.endNanos());
    if (iv != null) {
      list.add(iv);
    }
  }

  /** A whole number from an attribute value: a number, or a string holding one. */
  static OptionalLong number(Object v) {
    if (v instanceof Number n) {
      return OptionalLong.of(n.longValue());
    }
    if (v instanceof String s) {
      try {
        return OptionalLong.of(Long.parseLong(s.trim()));
      } catch (NumberFormatException e) {
        return OptionalLong.empty();
      }
    }
    return OptionalLong.empty();
  }

  private static SpanRecord missing(SpanRecord.Link l) {
    Map<String, Object> attrs = new TreeMap<>(l.attributes());
    return new SpanRecord(l.traceId(), l.spanId(), "", MISSING_SPAN_NAME, 0, 0, 0, 0, "", attrs, Map.of(), List.of(),
        List.of(), MISSING_SOURCE);
  }

  // ---------------------------------------------------------------- API

  /** Whether {@code s} is the placeholder {@link #consumedRollouts()} lists for a link whose target is missing. */
  public static boolean isMissing(SpanRecord s) {
    return MISSING_SOURCE.equals(s.source()) && MISSING_SPAN_NAME.equals(s.name());
  }

  /**
   * {@return whether the root is a GRPO step ({@code rl.grpo.step}); otherwise a trace of another kind (a user's own
   * actors, {@link RunView#otherTraces}), drawn without step number, phases, goodput or rollouts}
   */
  public boolean isGrpoStep() {
    return root.span().name().equals(RunView.STEP_ROOT);
  }

  /** The step number: the root's {@code rl.step} attribute, -1 when it has none. */
  public long step() {
    return step;
  }

  /** The root's {@code rl.mode} attribute ({@code sync}, {@code async}), empty when it has none. */
  public String mode() {
    Object m = root.span().attribute(RavelAttributes.ALGORITHM_MODE);
    return m == null ? "" : String.valueOf(m);
  }

  /** The step's trace id. */
  public String traceId() {
    return root.span().traceId();
  }

  /** The root ({@code rl.grpo.step}) with the whole tree beneath it. */
  public SpanNode root() {
    return root;
  }

  /** Every node of the tree in display order: depth first, children by start time (the root first). */
  public List<SpanNode> nodes() {
    return nodes;
  }

  /** The root's start, epoch nanoseconds. */
  public long startNanos() {
    return root.span().startNanos();
  }

  /** The step's wall time: the root span's duration. */
  public long durationNanos() {
    return root.span().durationNanos();
  }

  /**
   * The earliest start of any span in the tree (epoch nanoseconds). Equals {@link #startNanos()} unless a
   * descendant started before the root.
   */
  public long traceStartNanos() {
    return traceStart;
  }

  /**
   * The latest end of any span in the tree (epoch nanoseconds). Later than the root's end when spans beneath
   * it outlive it, as an async collector's generation under the step that published its weights does.
   */
  public long traceEndNanos() {
    return traceEnd;
  }

  /** {@link #traceEndNanos()} - {@link #traceStartNanos()}: the time the waterfalls scale their bars to. */
  public long traceDurationNanos() {
    return traceEnd - traceStart;
  }

  /**
   * Time per phase of the root's direct children, keyed by phase: {@code rl.grpo.X} as {@code X}
   * ({@code data_processing, refit, generation, reward_calculation, policy_and_reference_logprobs,
   * advantage_calculation, policy_training, checkpointing}), {@code rl.idle.X} as {@code idle.X}, any other
   * name as it is. A phase's time is the union of its spans' intervals clipped to the root's interval (two
   * {@code data_processing} spans add up; overlapping ones count once). Iteration order: the pipeline order
   * above, idle phases, then other keys alphabetically. Only phases that occur are present.
   */
  public Map<String, Long> phaseNanos() {
    return phaseNanos;
  }

  /** Where the step's wall time went; see {@link Goodput} for the rules. */
  public Goodput goodput() {
    return goodput;
  }

  /**
   * The driver-to-worker hop of the step's generation: each {@code rl.vllm.generate}'s duration over that of
   * its slowest worker call ({@code rl.worker.generate*} child), the median over the step's calls (1.0: the
   * driver waited for the engines and nothing else). NaN when the step has no such call.
   */
  public double hopRatio() {
    List<Double> ratios = new ArrayList<>();
    for (SpanNode n : nodes) {
      if (!n.name().equals(dev.ravel.telemetry.spans.SpanNames.VLLM_GENERATE)) {
        continue;
      }
      long slowest = n.children().stream().filter(c -> isWorkerGenerate(c.name()))
          .mapToLong(c -> c.span().durationNanos()).max().orElse(0);
      if (slowest > 0) {
        ratios.add(n.span().durationNanos() / (double) slowest);
      }
    }
    return median(ratios);
  }

  /**
   * How much of a worker's generate call its engine was at work: the extent of the call's {@code llm_request}
   * spans (first start to last end) over the call's duration, the median over the step's calls that have engine
   * spans. NaN without any (engine tracing off, or sampled out).
   */
  public double engineShare() {
    List<Double> shares = new ArrayList<>();
    for (SpanNode n : nodes) {
      if (!isWorkerGenerate(n.name()) || n.span().durationNanos() <= 0) {
        continue;
      }
      long first = Long.MAX_VALUE;
      long last = Long.MIN_VALUE;
      for (SpanNode c : n.children()) {
        if (c.name().equals(dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST)) {
          first = Math.min(first, c.span().startNanos());
          last = Math.max(last, c.span().endNanos());
        }
      }
      if (last > first) {
        shares.add((last - first) / (double) n.span().durationNanos());
      }
    }
    return median(shares);
  }

  private static boolean isWorkerGenerate(String name) {
    return name.equals(dev.ravel.telemetry.spans.SpanNames.WORKER_GENERATE)
        || name.equals(dev.ravel.telemetry.spans.SpanNames.WORKER_GENERATE_ASYNC);
  }

  private static double median(List<Double> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    List<Double> sorted = values.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /**
   * The spans on the critical path, in display order (the root first). Jaeger's rule: from the root's end,
   * take the child that finished last at or before the current point, follow it recursively, move the point
   * to its start and repeat; gaps between such children are the parent's own time. Children are clipped to
   * their parent's interval first, and those wholly outside it are not considered.
   */
  public List<SpanNode> criticalPath() {
    return criticalPath;
  }

  /**
   * The spans the root links to (the {@code rl.vllm.generate} spans that produced the trajectories an async
   * step trained on), in link order, resolved against all the run's spans. A link whose target is not among
   * them is listed as a placeholder named {@link #MISSING_SPAN_NAME} with the link's ids and attributes and
   * zero times; {@link #isMissing(SpanRecord)} tells which.
   */
  public List<SpanRecord> consumedRollouts() {
    return consumed;
  }

  /** The step numbers of the traces the consumed rollouts live in, ascending, without repeats. */
  public List<Long> consumedFromSteps() {
    return consumedFromSteps;
  }

  /** The step whose trace holds a consumed rollout (by the rollout's trace id), if that trace is a step's. */
  OptionalLong consumedStep(SpanRecord rollout) {
    Long n = consumedTraceSteps.get(rollout.traceId());
    return n == null ? OptionalLong.empty() : OptionalLong.of(n);
  }

  /** Number of levels of the tree: 1 for a root alone. */
  public int depth() {
    return depth;
  }

  /** Number of spans in the tree, the root included. */
  public int spanCount() {
    return nodes.size();
  }

  /** Number of spans in the tree with error status. */
  public int errorCount() {
    return errors;
  }

  /** The processes ({@link SpanRecord#process()}) of the tree's spans, in display order of first appearance. */
  public List<String> processes() {
    return processes;
  }

  /** The services ({@code service.name}) of the tree's spans, in display order of first appearance. */
  public List<String> services() {
    return services;
  }

  @Override
  public String toString() {
    return "StepView[step=" + step + ", trace=" + traceId() + ", spans=" + nodes.size() + "]";
  }
}
