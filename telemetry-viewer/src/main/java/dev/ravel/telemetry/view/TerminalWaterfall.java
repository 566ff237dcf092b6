package dev.ravel.telemetry.view;

import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.StringJoiner;

/**
 * Text waterfalls for a terminal, laid out like Jaeger's trace view.
 *
 * <p>{@link #render(StepView, int, boolean)} draws one step: a header (root "service: operation", step, trace
 * id, start, duration, services, processes, depth, span count, errors, phase split, goodput), a legend of
 * processes ({@code p1}, {@code p2}, ... in first-seen order, each its own colour with ANSI), a time ruler with
 * five ticks, then one row per span in tree order:
 * <pre>
 * name column (30%, tree-indented)  flags  timeline: bar at its start offset, scaled to the trace, + label
 * rl.grpo.step                       *    ##################################### 1.20s p1
 * |-rl.grpo.generation               *       ####################             610ms p1
 * | `-rl.vllm.generate             ! *       ###################              600ms p1
 * </pre>
 * Flags: {@code !} error status, {@code *} on the critical path. Bars are {@code #} on the critical path and
 * {@code =} off it; with ANSI they are blocks in the process's colour and erroneous names are red. The label
 * beside the bar is the duration and the process tag. Bars scale to {@link StepView#traceDurationNanos()},
 * which is the step's duration unless spans beneath the root outlive it. Last, the rollouts the step consumed
 * (its links) with the steps and traces they came from.
 *
 * <p>{@link #renderRun(RunView, int, boolean)} draws one line per step (wrapped when narrow) and the spans that
 * fit no step. Every line of both is at most {@code width} columns (ANSI escapes do not count); without ANSI the
 * output has no escape sequences and only ASCII characters besides those of span names and attributes. Control
 * characters in names are printed as '?'. Stateless and thread-safe.
 */
public final class TerminalWaterfall {
  /** The narrowest width accepted. */
  public static final int MIN_WIDTH = 40;

  /** Unconnected spans listed by {@link #renderRun} before "... and N more". */
  static final int MAX_UNCONNECTED_LINES = 20;

  /** The fewest same-named sibling spans folded into one row (the HTML waterfall folds the same runs). */
  public static final int FOLD_MIN = WaterfallModel.FOLD_MIN;

  /** Consumed rollouts listed by {@link #render} before "... and N more". */
  static final int MAX_ROLLOUT_LINES = 10;

  private static final char ESC = 0x1b;
  private static final String RESET = ESC + "[0m";
  private static final String RED = "1;31";
  private static final String BOLD = "1";
  private static final String DIM = "2";
  /** 16-colour foregrounds, red left out for errors. */
  private static final String[] PALETTE = {"36", "33", "35", "32", "34", "96", "93", "95", "92", "94"};

  /** Creates a renderer (it keeps no state). */
  public TerminalWaterfall() {}

  // ---------------------------------------------------------------- glyphs

  private record Glyphs(char barCritical, char bar, String branch, String lastBranch, String pipe, char ruler,
      char tick, String ellipsis) {}

  private static final Glyphs ASCII = new Glyphs('#', '=', "|-", "`-", "|", '-', '+', "~");
  private static final Glyphs UNICODE = new Glyphs('\u2588', '\u2592', "\u251c\u2500", "\u2514\u2500", "\u2502",
      '\u2500', '\u252c', "\u2026");

  /** Paints text with an SGR code when ANSI is on. */
  private record Paint(boolean ansi) {
    String p(String text, String sgr) {
      return ansi && sgr != null && !text.isEmpty() ? ESC + "[" + sgr + "m" + text + RESET : text;
    }
  }

  // ---------------------------------------------------------------- one step

  /**
   * One step's waterfall.
   *
   * @param width the most columns a line may take, at least {@link #MIN_WIDTH}
   * @param ansi whether to colour with ANSI escape sequences (and draw with Unicode blocks and tree lines)
   */
  public String render(StepView step, int width, boolean ansi) {
    return render(step, width, ansi, false);
  }

  /**
   * As {@link #render(StepView, int, boolean)}; unless {@code expand}, a run of {@value #FOLD_MIN} or more
   * sibling leaf spans with the same name in the same process and without errors (29 {@code llm_request}
   * under one worker) is one row: {@code name xN}, a bar from the first start to the last end, and the
   * count, median and longest duration. An {@code llm_request}'s lifecycle children (queued, prefill, decode,
   * preempted) fold with it; a request that does not fold (an error, too few siblings) shows them below it.
   */
  public String render(StepView step, int width, boolean ansi, boolean expand) {
    checkWidth(width);
    Paint paint = new Paint(ansi);
    Glyphs g = ansi ? UNICODE : ASCII;
    List<String> out = new ArrayList<>();
    WaterfallModel model = WaterfallModel.of(step);
    SpanRecord root = step.root().span();

    // header
    // a trace that is not a GRPO step (RunView.otherTraces) has no step number, phases or goodput
    boolean grpo = step.isGrpoStep();
    String title = paint.p(Fmt.clean(root.service()) + ": " + Fmt.clean(root.name()), BOLD) + (grpo ? "  step "
        + step.step() + (step.mode().isEmpty() ? "" : " (" + Fmt.clean(step.mode()) + ")") : "");
    out.add(title);
    List<String> meta = new ArrayList<>();
    meta.add("trace " + Fmt.clean(step.traceId()));
    meta.add("start " + Fmt.instant(step.startNanos()));
    meta.add("duration " + Fmt.duration(step.durationNanos()));
    if (step.traceDurationNanos() != step.durationNanos()) {
      meta.add("trace extent " + Fmt.duration(step.traceDurationNanos()));
    }
    meta.add("services " + step.services().size());
    meta.add("processes " + step.processes().size());
    meta.add("depth " + step.depth());
    meta.add("spans " + step.spanCount());
    meta.add(step.errorCount() > 0 ? paint.p("errors " + step.errorCount(), RED) : "errors 0");
    meta.add("critical path " + step.criticalPath().size() + " spans");
    out.addAll(pack(meta, "", "", width));
    out.addAll(placements(step, width));
    if (grpo) {
      out.addAll(pack(phaseItems(model.phases()), "phases: ", "  ", width));
      List<String> hop = hopItems(step);
      if (!hop.isEmpty()) {
        out.addAll(pack(hop, "generation: ", "  ", width));
      }
      out.addAll(pack(goodputItems(model.goodput()), "goodput: ", "  ", width));
    }
    List<String> legend = new ArrayList<>();
    for (WaterfallModel.Process p : model.processes()) {
      legend.add(paint.p("p" + (p.index() + 1), colour(p.index())) + " " + Fmt.clean(p.name())
          + (p.service().isEmpty() ? "" : " (" + Fmt.clean(p.service()) + ")")
          + (p.node().isEmpty() ? "" : " on " + Fmt.clean(p.node())));
    }
    out.addAll(pack(legend, "processes: ", "  ", width));
    out.add("");

    // ruler
    int nameW = Math.max(12, width * 30 / 100);
    int tw = width - nameW - 4;
    char[] labels = blank(tw);
    char[] ruler = new char[tw];
    java.util.Arrays.fill(ruler, g.ruler());
    int prevEnd = -2;
    List<String> ticks = model.tickLabels();
    int lastTick = ticks.size() - 1;
    for (int i = 0; i <= lastTick; i++) {
      int col = (int) Math.round(i * (tw - 1) / (double) lastTick);
      ruler[col] = g.tick();
      String label = ticks.get(i);
      int start = i == 0 ? 0 : i == lastTick ? tw - label.length() : col - label.length() / 2;
      start = Math.max(0, Math.min(tw - label.length(), start));
      if (start > prevEnd + 1 && label.length() <= tw) {
        label.getChars(0, label.length(), labels, start);
        prevEnd = start + label.length() - 1;
      }
    }
    out.add(" ".repeat(nameW + 4) + new String(labels));
    out.add(pad("span", nameW) + " " + "!*" + " " + paint.p(new String(ruler), DIM));

    // rows
    int maxDepth = step.depth() - 1;
    int unit = maxDepth * 2 <= nameW / 2 ? 2 : 1;
    new Rows(nameW, tw, g, paint, unit).draw(model, out, !expand);

    // consumed rollouts
    if (grpo) {
      out.add("");
      out.addAll(rollouts(step, width, paint));
    }

    return finish(out, width);
  }

  /**
   * A start-up's note on the spans the view placed in it ({@link RunView#PLACED_BY}): inference servers' own start-up
   * traces that had no parent of Ravel's, each drawn under the worker that launched it, and how that worker was found.
   */
  private static List<String> placements(StepView step, int width) {
    java.util.Map<String, Integer> by = new java.util.TreeMap<>();
    for (SpanNode n : step.nodes()) {
      if (n.span().attributes().get(RunView.PLACED_BY) instanceof String how) {
        by.merge(how, 1, Integer::sum);
      }
    }
    if (by.isEmpty()) {
      return List.of();
    }
    List<String> items = new ArrayList<>();
    by.forEach((how, n) -> items.add(n + " by " + (how.equals(RunView.PLACED_BY_PID)
        ? "the launching worker's pid (" + RunView.PLACED_BY_PID + ")" : "time: within a worker's launch, no trace link")));
    return pack(items, "placed (no parent in the trace): server start-up roots under their worker: ", "  ", width);
  }

  /** Draws span rows; one instance per rendering. */
  private static final class Rows {
    final int nameW;
    final int tw;
    final Glyphs g;
    final Paint paint;
    final int unit;

    Rows(int nameW, int tw, Glyphs g, Paint paint, int unit) {
      this.nameW = nameW;
      this.tw = tw;
      this.g = g;
      this.paint = paint;
      this.unit = unit;
    }

    /** One line per row, tree lines before the names: the root has none, each level below adds one guide. */
    void draw(WaterfallModel model, List<String> out, boolean fold) {
      List<WaterfallModel.Row> rows = model.rows();
      List<String> guides = new ArrayList<>(); // index k: what the open ancestor at depth k + 1 draws below it
      for (int i = 0; i < rows.size(); i++) {
        WaterfallModel.Row r = rows.get(i);
        int depth = r.node().depth();
        if (depth == 0) {
          out.add(line(r, ""));
          continue;
        }
        WaterfallModel.Fold f = fold ? model.foldAt(i) : null;
        guides.subList(depth - 1, guides.size()).clear();
        boolean last = f == null ? r.lastChild() : f.lastChild();
        String connector = unit == 2 ? (last ? g.lastBranch() : g.branch())
            : (last ? g.lastBranch().substring(0, 1) : g.branch().substring(0, 1));
        String prefix = String.join("", guides) + connector;
        out.add(f == null ? line(r, prefix) : folded(f, rows.subList(f.from(), f.to()), prefix));
        guides.add(last ? " ".repeat(unit) : g.pipe() + " ".repeat(unit - 1));
        if (f != null) {
          i = f.to() - 1;
        }
      }
    }

    /** One row for a run of same-named siblings ({@link WaterfallModel.Fold}): count, median and longest. */
    private String folded(WaterfallModel.Fold f, List<WaterfallModel.Row> group, String prefix) {
      int cs = group.stream().mapToInt(x -> x.firstCell(tw)).min().orElse(0);
      int ce = group.stream().mapToInt(x -> x.endCell(tw)).max().orElse(cs + 1);
      int proc = f.processIndex();
      String label = f.count() + " spans p50 " + Fmt.duration(f.medianNanos()) + " max "
          + Fmt.duration(f.maxNanos()) + " p" + (proc + 1);
      return draw(prefix, Fmt.clean(f.name()) + " x" + f.count(), false, f.onCriticalPath(), proc, cs, ce, label);
    }

    private String line(WaterfallModel.Row r, String prefix) {
      SpanNode n = r.node();
      SpanRecord s = n.span();
      String label = Fmt.duration(s.durationNanos()) + " p" + (r.processIndex() + 1);
      return draw(prefix, Fmt.clean(s.name()), s.isError(), n.onCriticalPath(), r.processIndex(), r.firstCell(tw),
          r.endCell(tw), label);
    }

    private String draw(String prefix, String name, boolean error, boolean critical, int proc, int cs, int ce,
        String label) {
      int maxPrefix = nameW / 2;
      if (prefix.length() > maxPrefix) {
        prefix = prefix.substring(prefix.length() - maxPrefix);
      }
      int room = nameW - prefix.length();
      if (columns(name) > room) {
        name = Fmt.cut(name, Math.max(0, room - g.ellipsis().length())) + g.ellipsis();
      }
      String namePart = paint.p(prefix, DIM) + paint.p(name, error ? RED : null)
          + " ".repeat(Math.max(0, room - columns(name)));
      String flags = (error ? paint.p("!", RED) : " ") + (critical ? paint.p("*", BOLD) : " ");

      char[] cells = blank(tw);
      boolean[] bar = new boolean[tw];
      for (int i = cs; i < ce; i++) {
        cells[i] = critical ? g.barCritical() : g.bar();
        bar[i] = true;
      }
      int at;
      if (ce + 1 + label.length() <= tw) {
        at = ce + 1;
      } else if (cs - 1 - label.length() >= 0) {
        at = cs - 1 - label.length();
      } else {
        label = " " + label; // over the bar's end, set off by a space
        at = Math.max(0, tw - label.length());
      }
      for (int i = 0; i < label.length() && at + i < tw; i++) {
        cells[at + i] = label.charAt(i);
        bar[at + i] = false;
      }
      StringBuilder timeline = new StringBuilder();
      int i = 0;
      while (i < tw) {
        int j = i;
        while (j < tw && bar[j] == bar[i]) {
          j++;
        }
        String run = new String(cells, i, j - i);
        timeline.append(bar[i] ? paint.p(run, colour(proc)) : run);
        i = j;
      }
      return namePart + " " + flags + " " + timeline;
    }
  }

  private static List<String> phaseItems(List<WaterfallModel.Phase> phases) {
    List<String> items = new ArrayList<>();
    for (WaterfallModel.Phase p : phases) {
      if (p.nanos() > 0) {
        items.add(Fmt.clean(p.label()) + " " + Fmt.percent(p.share()));
      }
    }
    if (items.isEmpty()) {
      items.add("none");
    }
    return items;
  }

  private static List<String> goodputItems(List<WaterfallModel.Slice> goodput) {
    return goodput.stream().map(g -> g.name() + " " + Fmt.percent(g.share())).toList();
  }

  private static List<String> rollouts(StepView step, int width, Paint paint) {
    List<String> out = new ArrayList<>();
    List<SpanRecord> consumed = step.consumedRollouts();
    if (consumed.isEmpty()) {
      out.add("consumed rollouts: none");
      return out;
    }
    long missing = consumed.stream().filter(StepView::isMissing).count();
    long traces = consumed.stream().map(SpanRecord::traceId).distinct().count();
    List<String> items = new ArrayList<>();
    items.add("consumed rollouts: " + consumed.size());
    StringJoiner steps = new StringJoiner(", ");
    step.consumedFromSteps().forEach(n -> steps.add(Long.toString(n)));
    items.add(step.consumedFromSteps().isEmpty() ? "from no step" : "from steps " + steps);
    items.add("in " + traces + (traces == 1 ? " trace" : " traces"));
    if (missing > 0) {
      items.add(paint.p(missing + " missing", RED));
    }
    out.addAll(pack(items, "", "  ", width));
    int shown = 0;
    for (SpanRecord r : consumed) {
      if (shown == MAX_ROLLOUT_LINES) {
        out.add("  ... and " + (consumed.size() - shown) + " more");
        break;
      }
      shown++;
      if (StepView.isMissing(r)) {
        out.add("  " + paint.p("! " + StepView.MISSING_SPAN_NAME, RED) + "  trace " + Fmt.clean(r.traceId())
            + "  span " + Fmt.clean(r.spanId()));
      } else {
        java.util.OptionalLong from = step.consumedStep(r);
        out.add("  - " + Fmt.clean(r.name()) + "  " + (from.isPresent() ? "step " + from.getAsLong() : "no step")
            + "  trace " + Fmt.shortId(Fmt.clean(r.traceId())) + "  span " + Fmt.shortId(Fmt.clean(r.spanId()))
            + "  " + Fmt.duration(r.durationNanos()) + "  " + Fmt.clean(r.process()));
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- the run

  /**
   * The traces of a run without GRPO steps ({@link RunView#otherTraces}), one line each: root name, start (UTC),
   * duration, spans, processes, errors, trace id.
   *
   * @param run the run
   * @return the list, ending in a newline
   */
  public static String renderTraces(RunView run) {
    StringBuilder sb = new StringBuilder();
    sb.append("run ").append(Fmt.clean(run.runId())).append(": ").append(run.otherTraces().size())
        .append(" trace(s), no GRPO steps (draw one: --trace TRACE_ID)\n\n");
    sb.append(String.format("  %-32s  %-12s  %10s  %5s  %9s  %6s  %s%n", "root", "start (UTC)", "duration", "spans",
        "processes", "errors", "trace"));
    java.time.format.DateTimeFormatter time = java.time.format.DateTimeFormatter.ofPattern("HH:mm:ss.SSS")
        .withZone(java.time.ZoneOffset.UTC);
    for (StepView v : run.otherTraces()) {
      sb.append(String.format("  %-32s  %-12s  %8.1fms  %5d  %9d  %6d  %s%n", Fmt.clean(v.root().span().name()),
          time.format(java.time.Instant.ofEpochSecond(0, v.startNanos())), v.durationNanos() / 1e6, v.spanCount(),
          v.processes().size(), v.errorCount(), v.traceId()));
    }
    return sb.toString();
  }

  /**
   * One line per step: step number, duration, errors, goodput (productive/overhead/idle/wasted), phase split
   * as shares of the step's duration; lines wrap, indented, when the width is too small. A leading {@code !}
   * marks steps with errors. Then the unconnected spans ({@link RunView#unconnected()}) with their process,
   * trace and why they are unconnected: at most {@value #MAX_UNCONNECTED_LINES}, then "... and N more".
   *
   * @param width the most columns a line may take, at least {@link #MIN_WIDTH}
   * @param ansi whether to colour with ANSI escape sequences
   */
  public String renderRun(RunView run, int width, boolean ansi) {
    checkWidth(width);
    Paint paint = new Paint(ansi);
    List<String> out = new ArrayList<>();
    out.add(paint.p("run " + (run.runId().isEmpty() ? "(no run id)" : Fmt.clean(run.runId())), BOLD));
    List<String> meta = new ArrayList<>();
    meta.add("start " + (run.spans().isEmpty() ? "-" : Fmt.instant(run.startNanos())));
    meta.add("steps " + run.steps().size());
    meta.add("spans " + run.spans().size());
    meta.add("processes " + run.processes().size());
    meta.add(run.errorCount() > 0 ? paint.p("errors " + run.errorCount(), RED) : "errors 0");
    meta.add("unconnected " + run.unconnected().size());
    out.addAll(pack(meta, "", "", width));
    out.add("");
    out.add(paint.p("  step  duration  errors  goodput prod/ovh/idle/waste  phases", DIM));
    for (StepView s : run.steps()) {
      Goodput gp = s.goodput();
      String head = (s.errorCount() > 0 ? paint.p("!", RED) : " ") + String.format("%5d", s.step()) + "  "
          + pad(Fmt.duration(s.durationNanos()), 8) + "  "
          + (s.errorCount() > 0 ? paint.p(pad("err " + s.errorCount(), 6), RED) : pad("err 0", 6));
      List<String> items = new ArrayList<>();
      items.add("good " + pct(gp.productive()) + "/" + pct(gp.overhead()) + "/" + pct(gp.idle()) + "/"
          + pct(gp.wasted()) + "%");
      items.addAll(phaseItems(WaterfallModel.phases(s)));
      items.addAll(hopItems(s));
      if (!s.mode().isEmpty()) {
        items.add("(" + Fmt.clean(s.mode()) + ")");
      }
      out.addAll(pack(items, head + "  ", " ".repeat(8), width));
    }
    if (run.steps().isEmpty()) {
      out.add("  (no " + RunView.STEP_ROOT + " traces)");
    }
    for (StepView up : run.startups()) {
      out.add("start-up " + Fmt.duration(up.durationNanos()) + (up.errorCount() > 0 ? paint.p("  errors "
          + up.errorCount(), RED) : "") + "  (its waterfall: --startup)");
    }
    out.add("");
    List<SpanRecord> loose = run.unconnected();
    if (loose.isEmpty()) {
      out.add("unconnected spans: none");
    } else {
      out.add(paint.p("unconnected spans: " + loose.size(), BOLD) + " (in no step's tree)");
      int shown = 0;
      for (SpanRecord s : loose) {
        if (shown == MAX_UNCONNECTED_LINES) {
          out.add("  ... and " + (loose.size() - shown) + " more");
          break;
        }
        shown++;
        out.add("  " + (s.isError() ? paint.p("!", RED) : "-") + " " + Fmt.clean(s.name()) + "  "
            + Fmt.clean(s.process()) + "  trace " + Fmt.shortId(Fmt.clean(s.traceId())) + "  "
            + Fmt.clean(run.unconnectedReason(s)));
      }
    }
    return finish(out, width);
  }

  private static int columns(String s) {
    return s.codePointCount(0, s.length());
  }

  /**
   * The generation hop's two ratios where the step has them: {@code hop} (the driver's {@code rl.vllm.generate}
   * over its slowest worker call) and {@code engine} (the engine spans' extent over a worker call).
   */
  private static List<String> hopItems(StepView s) {
    List<String> items = new ArrayList<>();
    double hop = s.hopRatio();
    if (Double.isFinite(hop)) {
      items.add(String.format(java.util.Locale.ROOT, "hop %.2fx", hop));
    }
    double engine = s.engineShare();
    if (Double.isFinite(engine)) {
      items.add(String.format(java.util.Locale.ROOT, "engine %.2f", engine));
    }
    return items;
  }

  private static String pct(double share) {
    return Long.toString(Math.round(share * 100));
  }

  // ---------------------------------------------------------------- layout helpers

  private static void checkWidth(int width) {
    if (width < MIN_WIDTH) {
      throw new IllegalArgumentException("width must be at least " + MIN_WIDTH + ", got " + width);
    }
  }

  private static String colour(int index) {
    return PALETTE[index % PALETTE.length];
  }

  private static char[] blank(int n) {
    char[] c = new char[n];
    java.util.Arrays.fill(c, ' ');
    return c;
  }

  private static String pad(String s, int n) {
    return s.length() >= n ? s : s + " ".repeat(n - s.length());
  }

  /** Items joined by two spaces into lines of at most {@code width} visible columns. */
  private static List<String> pack(List<String> items, String first, String cont, int width) {
    List<String> lines = new ArrayList<>();
    StringBuilder cur = new StringBuilder(first);
    int len = visible(first);
    boolean empty = true;
    for (String item : items) {
      int w = visible(item);
      if (!empty && len + 2 + w > width) {
        lines.add(cur.toString());
        cur = new StringBuilder(cont);
        len = visible(cont);
        empty = true;
      }
      if (!empty) {
        cur.append("  ");
        len += 2;
      }
      cur.append(item);
      len += w;
      empty = false;
    }
    lines.add(cur.toString());
    return lines;
  }

  /** Columns a line takes: code points, ANSI escape sequences not counted. */
  static int visible(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); ) {
      char c = s.charAt(i);
      if (c == ESC) {
        i = skipEscape(s, i);
        continue;
      }
      n++;
      i += Character.charCount(s.codePointAt(i));
    }
    return n;
  }

  private static int skipEscape(String s, int i) {
    int j = i + 1;
    if (j < s.length() && s.charAt(j) == '[') {
      j++;
      while (j < s.length() && !(s.charAt(j) >= '@' && s.charAt(j) <= '~')) {
        j++;
      }
      return Math.min(s.length(), j + 1);
    }
    return j;
  }

  /** The line cut to {@code width} visible columns (colour reset if cut inside a colour). */
  static String fit(String s, int width) {
    if (visible(s) <= width) {
      return s;
    }
    StringBuilder sb = new StringBuilder();
    int n = 0;
    boolean escapes = false;
    for (int i = 0; i < s.length(); ) {
      char c = s.charAt(i);
      if (c == ESC) {
        int j = skipEscape(s, i);
        sb.append(s, i, j);
        escapes = true;
        i = j;
        continue;
      }
      if (n == width) {
        break;
      }
      int cp = s.codePointAt(i);
      sb.appendCodePoint(cp);
      n++;
      i += Character.charCount(cp);
    }
    if (escapes) {
      sb.append(RESET);
    }
    return sb.toString();
  }

  private static String finish(List<String> lines, int width) {
    StringBuilder sb = new StringBuilder();
    for (String l : lines) {
      String f = fit(l, width);
      int end = f.length();
      while (end > 0 && f.charAt(end - 1) == ' ') {
        end--;
      }
      sb.append(f, 0, end).append('\n');
    }
    return sb.toString();
  }
}
