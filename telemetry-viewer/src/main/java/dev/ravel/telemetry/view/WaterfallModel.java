package dev.ravel.telemetry.view;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@link TerminalWaterfall} and {@link HtmlWaterfall} draw of one step, computed once from a
 * {@link StepView}: the processes in first-seen order (their index picks each renderer's colour), the time scale
 * (trace start and extent) with the ruler's labels, one row per span in display order with its process and its
 * bar's offsets, the runs of same-named sibling spans both fold into one row ({@link #folds()}), the phase
 * split and the goodput split. The renderers only lay these out (as percentages, as terminal cells) and choose
 * their own palettes, glyphs and escaping.
 *
 * <p>Bars scale to {@link #extentNanos()}: {@link StepView#traceDurationNanos()}, at least 1 ns so a step of zero
 * duration still divides. Immutable.
 */
final class WaterfallModel {
  /** Ticks on the time ruler: at 0, 1/4, 1/2, 3/4 and all of the extent. */
  static final int TICKS = 5;

  /** The fewest same-named sibling spans folded into one row ({@link #folds()}). */
  static final int FOLD_MIN = 3;

  /**
   * A process of the step.
   *
   * @param name the span's {@link SpanRecord#process()} ({@code role/pid})
   * @param service the service of the first span seen in it (display order)
   * @param index its place in first-seen order, from 0: what picks its colour
   * @param node the address of the Ray node it ran on ({@code ray.node.ip}), empty when unknown
   */
  record Process(String name, String service, int index, String node) {
    Process(String name, String service, int index) {
      this(name, service, index, "");
    }
  }

  /**
   * A phase of the step ({@link StepView#phaseNanos()}).
   *
   * @param key the phase key ({@code generation}, {@code idle.refit_bubble}, ...)
   * @param label its short label ({@code gen}, {@code bubble}, ...), not yet escaped
   * @param nanos its time
   * @param share its time as a share of the step's duration, 0 when that is not positive
   */
  record Phase(String key, String label, long nanos, double share) {}

  /**
   * A goodput class and its share of the step ({@link Goodput}).
   *
   * @param name {@code productive}, {@code overhead}, {@code idle} or {@code wasted}
   * @param share its share
   */
  record Slice(String name, double share) {}

  /**
   * One span's row.
   *
   * @param node the span in the tree
   * @param processIndex the {@link Process#index()} of the span's process
   * @param lastChild whether it is the last of its parent's children (true for the root)
   * @param startOffsetNanos its start less the trace start
   * @param endOffsetNanos its end less the trace start
   * @param extentNanos the time the bars scale to ({@link WaterfallModel#extentNanos()})
   */
  record Row(SpanNode node, int processIndex, boolean lastChild, long startOffsetNanos, long endOffsetNanos,
      long extentNanos) {
    /** The span. */
    SpanRecord span() {
      return node.span();
    }

    /** Where the bar starts, in percent of the extent, within [0, 100]. */
    double leftPercent() {
      double left = 100.0 * startOffsetNanos / extentNanos;
      return Math.max(0, Math.min(100, left));
    }

    /** The bar's length in percent of the extent (its duration's), cut so that it ends by 100. */
    double widthPercent() {
      double width = 100.0 * span().durationNanos() / extentNanos;
      return Math.max(0, Math.min(100 - leftPercent(), width));
    }

    /** The first of {@code cells} equal cells spanning the extent that the bar covers, within [0, cells). */
    int firstCell(int cells) {
      int first = (int) Math.floor(startOffsetNanos * (double) cells / extentNanos);
      return Math.max(0, Math.min(cells - 1, first));
    }

    /** The cell after the bar's last one: at least one cell past {@link #firstCell}, at most {@code cells}. */
    int endCell(int cells) {
      int end = (int) Math.ceil(endOffsetNanos * (double) cells / extentNanos);
      return Math.max(firstCell(cells) + 1, Math.min(cells, end));
    }
  }

  /**
   * A run of {@link #FOLD_MIN} or more consecutive sibling spans ({@link #rows()} {@code from} to {@code to},
   * exclusive, their lifecycle children included) with the same name, in the same process and without errors,
   * that the waterfalls draw as one row (29 {@code llm_request} under one worker): the count, median and longest
   * duration, and a bar from the first start to the last end.
   *
   * @param from the index in {@link #rows()} of its first row
   * @param to the index after its last row (the end of its last span's subtree)
   * @param count how many sibling spans it folds (their children not counted)
   * @param name the spans' name
   * @param processIndex their process's {@link Process#index()}
   * @param medianNanos the median duration: of the durations sorted, the one at {@code (count - 1) / 2}
   * @param maxNanos the longest duration
   * @param startOffsetNanos the earliest start less the trace start
   * @param endOffsetNanos the latest end less the trace start
   * @param onCriticalPath whether any of them is on the critical path
   * @param lastChild whether its last span is the last of its parent's children
   */
  record Fold(int from, int to, int count, String name, int processIndex, long medianNanos, long maxNanos,
      long startOffsetNanos, long endOffsetNanos, boolean onCriticalPath, boolean lastChild) {}

  /** The children of {@code llm_request} that fold with it (its lifecycle: each a leaf, none an error). */
  private static final java.util.Set<String> LIFECYCLE = java.util.Set.of(
      dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST_QUEUED, dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST_PREFILL,
      dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST_DECODE, dev.ravel.telemetry.spans.SpanNames.LLM_REQUEST_PREEMPTED);

  private final StepView step;
  private final long traceStart;
  private final long extent;
  private final List<Process> processes;
  private final Map<String, Process> byName;
  private final List<Row> rows;
  private final List<String> tickLabels;
  private final List<Phase> phases;
  private final List<Slice> goodput;
  private final List<Fold> folds;
  private final Map<Integer, Fold> foldsByFirstRow;

  private WaterfallModel(StepView step) {
    this.step = step;
    this.traceStart = step.traceStartNanos();
    this.extent = Math.max(1, step.traceDurationNanos());
    Map<String, Process> procs = new LinkedHashMap<>();
    for (SpanNode n : step.nodes()) {
      procs.computeIfAbsent(n.span().process(), p -> new Process(p, n.span().service(), procs.size(),
          nodeOf(n.span())));
    }
    this.byName = Collections.unmodifiableMap(procs);
    this.processes = List.copyOf(procs.values());
    List<Row> all = new ArrayList<>(step.spanCount());
    addRows(step.root(), true, all);
    this.rows = List.copyOf(all);
    this.folds = folds(rows);
    Map<Integer, Fold> byFirst = new LinkedHashMap<>();
    folds.forEach(f -> byFirst.put(f.from(), f));
    this.foldsByFirstRow = Collections.unmodifiableMap(byFirst);
    List<String> labels = new ArrayList<>(TICKS);
    for (int i = 0; i < TICKS; i++) {
      labels.add(i == 0 ? "0" : Fmt.duration(Math.round(extent * (i / (double) (TICKS - 1)))));
    }
    this.tickLabels = List.copyOf(labels);
    this.phases = phases(step);
    Goodput gp = step.goodput();
    this.goodput = List.of(new Slice("productive", gp.productive()), new Slice("overhead", gp.overhead()),
        new Slice("idle", gp.idle()), new Slice("wasted", gp.wasted()));
  }

  /** The model of one step. */
  static WaterfallModel of(StepView step) {
    return new WaterfallModel(step);
  }

  /** The phases of a step in {@link StepView#phaseNanos()} order, with their shares of its duration. */
  static List<Phase> phases(StepView step) {
    long d = step.durationNanos();
    List<Phase> out = new ArrayList<>(step.phaseNanos().size());
    step.phaseNanos().forEach((key, nanos) ->
        out.add(new Phase(key, Phases.label(key), nanos, d <= 0 ? 0 : (double) nanos / d)));
    return List.copyOf(out);
  }

  /**
   * The folds of {@code rows}: each maximal run of consecutive sibling spans below the root without errors, with
   * the same depth, parent, process and name, when it has at least {@value #FOLD_MIN} spans; a span folds when it
   * is a leaf, or an {@code llm_request} whose children are only its lifecycle phases (which fold with it: the
   * fold's rows run to the end of its last span's subtree).
   */
  static List<Fold> folds(List<Row> rows) {
    List<Fold> out = new ArrayList<>();
    for (int i = 0; i < rows.size(); i++) {
      Row first = rows.get(i);
      if (first.node().depth() == 0 || !foldable(first)) {
        continue;
      }
      List<Row> members = new ArrayList<>();
      members.add(first);
      int end = afterSubtree(rows, i);
      while (end < rows.size() && sameGroup(first, rows.get(end))) {
        members.add(rows.get(end));
        end = afterSubtree(rows, end);
      }
      if (members.size() >= FOLD_MIN) {
        out.add(fold(rows, members, i, end));
        i = end - 1;
      }
    }
    return List.copyOf(out);
  }

  /**
   * Whether {@code r} may fold with its siblings: no error, and no children but the lifecycle phases of an
   * {@code llm_request} (leaves without errors), which fold with it.
   */
  private static boolean foldable(Row r) {
    return !r.span().isError() && r.node().children().stream()
        .allMatch(c -> LIFECYCLE.contains(c.name()) && !c.hasChildren() && !c.span().isError());
  }

  /** The index of the first row after row {@code k} and the rows of its subtree. */
  private static int afterSubtree(List<Row> rows, int k) {
    int depth = rows.get(k).node().depth();
    int m = k + 1;
    while (m < rows.size() && rows.get(m).node().depth() > depth) {
      m++;
    }
    return m;
  }

  private static boolean sameGroup(Row first, Row r) {
    return foldable(r) && r.node().depth() == first.node().depth() && r.processIndex() == first.processIndex()
        && r.span().parentSpanId().equals(first.span().parentSpanId()) && r.span().name().equals(first.span().name());
  }

  private static Fold fold(List<Row> rows, List<Row> group, int from, int to) {
    long[] d = group.stream().mapToLong(x -> x.span().durationNanos()).sorted().toArray();
    long start = group.stream().mapToLong(Row::startOffsetNanos).min().orElse(0);
    long end = group.stream().mapToLong(Row::endOffsetNanos).max().orElse(start);
    boolean critical = group.stream().anyMatch(x -> x.node().onCriticalPath());
    Row first = group.get(0);
    return new Fold(from, to, group.size(), first.span().name(), first.processIndex(), d[(d.length - 1) / 2],
        d[d.length - 1], start, end, critical, group.get(group.size() - 1).lastChild());
  }

  /** Depth first, children in order, as {@link StepView#nodes()}. */
  private void addRows(SpanNode n, boolean last, List<Row> out) {
    SpanRecord s = n.span();
    out.add(new Row(n, processIndex(s.process()), last, s.startNanos() - traceStart, s.endNanos() - traceStart,
        extent));
    List<SpanNode> kids = n.children();
    for (int i = 0; i < kids.size(); i++) {
      addRows(kids.get(i), i == kids.size() - 1, out);
    }
  }

  /** The step drawn. */
  StepView step() {
    return step;
  }

  /** The earliest start of any span of the step ({@link StepView#traceStartNanos()}), epoch nanoseconds. */
  long traceStartNanos() {
    return traceStart;
  }

  /** The time the bars scale to: {@link StepView#traceDurationNanos()}, at least 1. */
  long extentNanos() {
    return extent;
  }

  /** The processes of the step's spans in first-seen (display) order. */
  List<Process> processes() {
    return processes;
  }

  /** The index of a process in {@link #processes()}; 0 for a process the step does not have. */
  int processIndex(String process) {
    Process p = byName.get(process);
    return p == null ? 0 : p.index();
  }

  /** One row per span, in display order ({@link StepView#nodes()}): the root first, then depth first. */
  List<Row> rows() {
    return rows;
  }

  /** The runs of same-named sibling spans drawn as one row ({@link Fold}), in row order; they do not overlap. */
  List<Fold> folds() {
    return folds;
  }

  /** The fold whose first row is {@code rows().get(rowIndex)}, or null when none starts there. */
  Fold foldAt(int rowIndex) {
    return foldsByFirstRow.get(rowIndex);
  }

  /** The ruler's {@value #TICKS} labels: {@code 0}, then the durations at 1/4, 1/2, 3/4 and all of the extent. */
  List<String> tickLabels() {
    return tickLabels;
  }

  /** The step's phases ({@link #phases(StepView)}). */
  List<Phase> phases() {
    return phases;
  }

  /** The step's goodput: productive, overhead, idle and wasted, in that order. */
  List<Slice> goodput() {
    return goodput;
  }

  private static String nodeOf(SpanRecord s) {
    Object ip = s.resourceAttribute(dev.ravel.telemetry.spans.RavelAttributes.RAY_NODE_IP);
    return ip == null ? "" : ip.toString();
  }
}
