package dev.ravel.telemetry.view;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.traces.SpanRecord;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * One step as a self-contained HTML page that looks like Jaeger's trace view: header (operation, step, trace
 * id, start, duration, services, processes, depth, span count, errors), phase split and goodput bars, a legend
 * of processes with their colours, a time ruler with five ticks, and a collapsible tree of spans whose bars sit
 * in a timeline column, coloured per process, red for errors, with the critical path underlined. Clicking a row
 * opens a panel with the span's attributes, resource, events and links as tables. The rollouts the step
 * consumed are listed last.
 *
 * <p>It reads like {@link TerminalWaterfall}: runs of same-named sibling spans ({@link WaterfallModel#folds()},
 * the terminal's rule) are one row with their count, median and longest duration and a bar over the group,
 * which a click unfolds into the spans' own rows; dragging on the time ruler (or the from/to inputs) zooms
 * on a time range, the bars and ruler rescaled and the spans outside it dimmed; a search box highlights the
 * spans whose name or attributes ({@code key=value}) contain the text, case-insensitive, dims the others,
 * counts them and marks the folded groups that hold some.
 *
 * <p>The page needs nothing from outside: CSS and JavaScript are inline (they are kept as the classpath
 * resources {@code waterfall.css} and {@code waterfall.js} next to this class, read once; a missing one fails
 * {@link #render} with an {@link IllegalStateException}), a Content-Security-Policy forbids any network
 * access, and the document is ASCII (other characters are escaped), so it displays the same whatever encoding
 * it is written in. The data is embedded as JSON in {@code <script type="application/json" id="trace-data">}
 * with {@code < > &} escaped as {@code \}{@code u003c ...}, so no span name or attribute can close the script
 * element; all text in the markup is HTML-escaped and the script only ever sets {@code textContent}.
 *
 * <p>DOM hooks (stable, for tests and tools):
 * <ul>
 *   <li>{@code #waterfall}: the container of the rows;</li>
 *   <li>{@code .span-row} per span, in tree order, with {@code data-span-id}, {@code data-span-name},
 *       {@code data-parent-id}, {@code data-depth}, {@code data-process}, {@code data-critical-path}
 *       ({@code true|false}), {@code data-error} ({@code true|false}); classes {@code error},
 *       {@code on-critical-path}, {@code collapsed}, {@code open} as they apply; id {@code row-<span id>};</li>
 *   <li>{@code .span-row} also has {@code data-start-offset-nanos}, {@code data-end-offset-nanos} and, in a
 *       folded group, class {@code in-fold} and {@code data-fold-id} (such rows start hidden);</li>
 *   <li>{@code .fold-row} (id {@code fold-<n>}, before its spans' rows) per folded group, with
 *       {@code data-fold-id}, {@code data-span-name}, {@code data-parent-id}, {@code data-depth},
 *       {@code data-process}, {@code data-fold-count}, {@code data-fold-p50-nanos}, {@code data-fold-max-nanos},
 *       {@code data-start-offset-nanos}, {@code data-end-offset-nanos}; its button {@code .fold-toggle} shows or
 *       folds the spans (class {@code unfolded} when shown); {@code .fold-count}, {@code .fold-p50},
 *       {@code .fold-max} in its label; {@code has-match} and {@code .fold-match} when a search matches in it;</li>
 *   <li>{@code #span-search}, {@code #search-count} ({@code data-matches}); rows get {@code search-hit} or
 *       {@code search-miss} while a search is on;</li>
 *   <li>{@code #zoom-from}, {@code #zoom-to} (ms), {@code #zoom-apply}, {@code #zoom-reset}, {@code #zoom-range};
 *       while zoomed {@code #waterfall} has {@code data-zoom-from-nanos}, {@code data-zoom-to-nanos} and rows
 *       outside the range have class {@code out-of-range};</li>
 *   <li>{@code .toggle} (a button, only in rows with children) collapses and expands the subtree;</li>
 *   <li>{@code .span-detail} (id {@code detail-<span id>}, same {@code data-span-id}) follows its row, hidden
 *       until the row is clicked (or Enter is pressed on it); once open it holds tables whose keys are
 *       {@code .attr-key} (span attributes), {@code .resource-key}, and rows {@code .event-row},
 *       {@code .link-row};</li>
 *   <li>{@code .bar}, {@code .dur-label}, {@code .ruler .tick}, {@code .legend-item}, {@code .consumed-rollout}
 *       (with {@code missing} when the linked span is absent), {@code #trace-data}, buttons {@code #expand-all},
 *       {@code #collapse-all}, checkbox {@code #show-critical-path}.</li>
 * </ul>
 * Stateless and thread-safe; the same input gives the same document.
 */
public final class HtmlWaterfall {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  /** Jaeger's service colours, in first-seen order. */
  static final String[] PALETTE = {"#17B8BE", "#F8DCA1", "#B7885E", "#FFCB99", "#F89570", "#829AE3", "#E79FD5",
      "#1E96BE", "#89DAC1", "#B3AD9E", "#12939A", "#DDB27C", "#88572C", "#FF9833", "#EF5D28", "#162A65", "#DA70BF",
      "#125C77", "#4DC19C", "#776E57"};

  private static final Map<String, String> PHASE_COLOURS = Map.of(Phases.DATA, "#76b7b2", Phases.REFIT, "#edc948",
      Phases.GENERATION, "#4e79a7", Phases.REWARD, "#59a14f", Phases.LOGPROBS, "#9c755f", Phases.ADVANTAGE,
      "#b07aa1", Phases.TRAINING, "#f28e2b", Phases.CHECKPOINT, "#bab0ac", Phases.IDLE_STARVATION, "#d7d7d7",
      Phases.IDLE_BUBBLE, "#c2c2c2");

  private static final Map<String, String> GOODPUT_COLOURS = Map.of("productive", "#59a14f", "overhead", "#edc948",
      "idle", "#c8c8c8", "wasted", "#e15759");

  private static final String[] KINDS = {"unspecified", "internal", "server", "client", "producer", "consumer"};

  /** Creates a renderer (it keeps no state). */
  public HtmlWaterfall() {}

  /**
   * The page for one step.
   *
   * @param step the step to draw
   * @param run the run it belongs to, for the run id, the steps that linked spans live in and the count of
   *     unconnected spans; may be null
   */
  public String render(StepView step, RunView run) {
    WaterfallAssets assets = WaterfallAssets.get();
    WaterfallModel model = WaterfallModel.of(step);
    SpanRecord root = step.root().span();

    StringBuilder h = new StringBuilder(32 * 1024 + step.spanCount() * 600);
    // a trace that is not a GRPO step (RunView.otherTraces) has no step number, phases, goodput or rollouts
    boolean grpo = step.isGrpoStep();
    String title = root.service() + ": " + root.name() + (grpo ? " step " + step.step() : " trace");
    h.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        .append("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ")
        .append("style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n")
        .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
        .append("<link rel=\"icon\" href=\"data:,\">\n")
        .append("<title>").append(Fmt.html(title)).append("</title>\n<style>\n").append(assets.css())
        .append("</style>\n")
        .append("</head>\n<body class=\"cp-on\">\n");

    // header
    h.append("<header class=\"trace-header\">\n<h1><span class=\"root-service\">").append(Fmt.html(root.service()))
        .append("</span>: <span class=\"root-operation\">").append(Fmt.html(root.name())).append("</span>")
        .append(grpo ? "<span class=\"step-badge\">step " + step.step()
            + (step.mode().isEmpty() ? "" : " &middot; " + Fmt.html(step.mode())) + "</span>" : "").append("</h1>\n")
        .append("<dl class=\"trace-meta\">\n");
    if (run != null && !run.runId().isEmpty()) {
      meta(h, "run-id", "Run", run.runId(), true);
    }
    meta(h, "trace-id", "Trace ID", step.traceId(), true);
    meta(h, "start", "Start", Fmt.instant(step.startNanos()), false);
    meta(h, "duration", "Duration", Fmt.duration(step.durationNanos()), false);
    if (step.traceDurationNanos() != step.durationNanos()) {
      meta(h, "extent", "Trace extent", Fmt.duration(step.traceDurationNanos()), false);
    }
    meta(h, "services", "Services", Integer.toString(step.services().size()), false);
    meta(h, "processes", "Processes", Integer.toString(step.processes().size()), false);
    meta(h, "depth", "Depth", Integer.toString(step.depth()), false);
    meta(h, "span-count", "Total spans", Integer.toString(step.spanCount()), false);
    meta(h, "errors", "Errors", Integer.toString(step.errorCount()), false);
    if (grpo) {
      meta(h, "consumed", "Consumed rollouts", Integer.toString(step.consumedRollouts().size()), false);
    }
    if (run != null) {
      meta(h, "unconnected", "Unconnected spans in run", Integer.toString(run.unconnected().size()), false);
    }
    h.append("</dl>\n</header>\n");

    // phase split and goodput
    if (grpo) {
      summary(h, model);
    }

    // legend and controls
    legendAndControls(h, model, assets, step, run, grpo);
    return h.toString();
  }

  private static void summary(StringBuilder h, WaterfallModel model) {
    h.append("<section class=\"summary\">\n<div class=\"phases\"><div class=\"summary-title\">Phases</div>")
        .append("<div class=\"stack\">");
    StringBuilder phaseLegend = new StringBuilder();
    for (WaterfallModel.Phase p : model.phases()) {
      String c = PHASE_COLOURS.getOrDefault(p.key(), "#ff9da7");
      String label = p.label() + " " + Fmt.percent(p.share()) + " (" + Fmt.duration(p.nanos()) + ")";
      h.append("<span class=\"phase-seg\" data-phase=\"").append(Fmt.html(p.key())).append("\" style=\"width:")
          .append(pct(p.share())).append("%;background:").append(c).append("\" title=\"").append(Fmt.html(label))
          .append("\"></span>");
      phaseLegend.append("<span class=\"stack-item\"><i style=\"background:").append(c).append("\"></i>")
          .append(Fmt.html(label)).append("</span> ");
    }
    h.append("</div><div class=\"stack-legend\">").append(phaseLegend).append("</div></div>\n");
    h.append("<div class=\"goodput\"><div class=\"summary-title\">Goodput</div><div class=\"stack\">");
    StringBuilder gpLegend = new StringBuilder();
    for (WaterfallModel.Slice g : model.goodput()) {
      String c = GOODPUT_COLOURS.get(g.name());
      h.append("<span class=\"goodput-seg\" data-class=\"").append(g.name()).append("\" style=\"width:")
          .append(pct(g.share())).append("%;background:").append(c).append("\" title=\"").append(g.name())
          .append(' ').append(Fmt.percent(g.share())).append("\"></span>");
      gpLegend.append("<span class=\"stack-item\"><i style=\"background:").append(c).append("\"></i>")
          .append(g.name()).append(' ').append(Fmt.percent(g.share())).append("</span> ");
    }
    h.append("</div><div class=\"stack-legend\">").append(gpLegend).append("</div></div>\n</section>\n");
  }

  private static void legendAndControls(StringBuilder h, WaterfallModel model, WaterfallAssets assets, StepView step,
      RunView run, boolean grpo) {
    h.append("<ul class=\"legend\">\n");
    for (WaterfallModel.Process p : model.processes()) {
      h.append("<li class=\"legend-item\" data-process=\"").append(Fmt.html(p.name()))
          .append("\"><span class=\"swatch\" style=\"background:").append(colour(p.index())).append("\"></span>")
          .append(Fmt.html(p.name()));
      if (!p.service().isEmpty()) {
        h.append(" <span class=\"legend-service\">(").append(Fmt.html(p.service())).append(")</span>");
      }
      if (!p.node().isEmpty()) {
        h.append(" <span class=\"legend-node\">on ").append(Fmt.html(p.node())).append("</span>");
      }
      h.append("</li>\n");
    }
    h.append("</ul>\n<div class=\"controls\"><button type=\"button\" id=\"expand-all\">Expand all</button>")
        .append("<button type=\"button\" id=\"collapse-all\">Collapse all</button>")
        .append("<label><input type=\"checkbox\" id=\"show-critical-path\" checked> Highlight critical path</label>")
        .append("<span class=\"hint\">Click a row for its attributes, resource, events and links.</span></div>\n");
    tools(h, model);

    // waterfall
    h.append("<div class=\"waterfall\" id=\"waterfall\">\n<div class=\"ruler-row\"><div class=\"name-col\">")
        .append("Service &amp; Operation</div><div class=\"timeline-col ruler\" title=\"Drag to zoom on a time range\">");
    List<String> ticks = model.tickLabels();
    for (int i = 0; i < ticks.size(); i++) {
      if (i < ticks.size() - 1) {
        h.append("<span class=\"tick\" style=\"left:").append(i * 100 / (ticks.size() - 1)).append("%\">")
            .append(ticks.get(i)).append("</span>");
      } else {
        h.append("<span class=\"tick tick-last\" style=\"right:0\">").append(ticks.get(i)).append("</span>");
      }
    }
    h.append("<div class=\"zoom-selection\" hidden></div></div></div>\n");
    List<WaterfallModel.Row> rows = model.rows();
    String foldId = null;
    int foldEnd = -1;
    for (int i = 0; i < rows.size(); i++) {
      WaterfallModel.Fold f = model.foldAt(i);
      if (f != null) {
        foldId = "fold-" + model.folds().indexOf(f);
        foldEnd = f.to();
        fold(h, foldId, f, rows.get(i), model.extentNanos());
      }
      row(h, rows.get(i), i < foldEnd ? foldId : null);
    }
    h.append("</div>\n");

    // consumed rollouts
    if (grpo) {
      consumed(h, step);
    }

    h.append("<script type=\"application/json\" id=\"trace-data\">")
        .append(Fmt.scriptJson(json(model, run)))
        .append("</script>\n<script>\n").append(assets.js()).append("</script>\n</body>\n</html>\n");
  }

  private static void meta(StringBuilder h, String key, String label, String value, boolean mono) {
    h.append("<div class=\"meta-item\" data-key=\"").append(key).append("\"><dt>").append(label).append("</dt><dd")
        .append(mono ? " class=\"mono\"" : "").append('>').append(Fmt.html(value)).append("</dd></div>\n");
  }

  /** The search box and the zoom controls. */
  private static void tools(StringBuilder h, WaterfallModel model) {
    h.append("<div class=\"tools\">")
        .append("<label class=\"search\">Search <input type=\"search\" id=\"span-search\" autocomplete=\"off\"")
        .append(" placeholder=\"span name or attribute\" aria-describedby=\"search-count\"></label>")
        .append("<span id=\"search-count\" class=\"search-count\" aria-live=\"polite\"></span>")
        .append("<form id=\"zoom-form\" class=\"zoom\"><label>From <input type=\"number\" id=\"zoom-from\"")
        .append(" min=\"0\" step=\"any\" inputmode=\"decimal\"> ms</label><label>to <input type=\"number\"")
        .append(" id=\"zoom-to\" min=\"0\" step=\"any\" inputmode=\"decimal\"> ms</label>")
        .append("<button type=\"submit\" id=\"zoom-apply\">Zoom</button>")
        .append("<button type=\"button\" id=\"zoom-reset\" disabled>Reset zoom</button>")
        .append("<span id=\"zoom-range\" class=\"zoom-range\" aria-live=\"polite\">whole trace, ")
        .append(Fmt.duration(model.extentNanos())).append("</span></form>")
        .append("<span class=\"hint\">Drag on the time axis to zoom.</span></div>\n");
  }

  /**
   * The row of a {@link WaterfallModel.Fold} (before its spans' rows, which start hidden): the name, the count,
   * and a bar over the group's extent labelled with the count, median and longest duration.
   */
  private static void fold(StringBuilder h, String id, WaterfallModel.Fold f, WaterfallModel.Row first,
      long extent) {
    SpanRecord s = first.span();
    String name = Fmt.html(f.name());
    h.append("<div class=\"fold-row").append(f.onCriticalPath() ? " on-critical-path" : "").append("\" id=\"")
        .append(id).append("\" data-fold-id=\"").append(id).append("\" data-span-name=\"").append(name)
        .append("\" data-parent-id=\"").append(Fmt.html(s.parentSpanId())).append("\" data-depth=\"")
        .append(first.node().depth()).append("\" data-process=\"").append(Fmt.html(s.process()))
        .append("\" data-fold-count=\"").append(f.count()).append("\" data-fold-p50-nanos=\"")
        .append(f.medianNanos()).append("\" data-fold-max-nanos=\"").append(f.maxNanos())
        .append("\" data-start-offset-nanos=\"").append(f.startOffsetNanos()).append("\" data-end-offset-nanos=\"")
        .append(f.endOffsetNanos()).append("\">");
    h.append("<div class=\"name-col\" style=\"padding-left:").append(8 + first.node().depth() * 16).append("px\">")
        .append("<button type=\"button\" class=\"fold-toggle\" aria-expanded=\"false\" aria-controls=\"")
        .append(id).append("\" title=\"Show or fold the ").append(f.count()).append(" spans\">&#x25b8;</button>")
        .append("<span class=\"swatch\" style=\"background:").append(colour(f.processIndex())).append("\"></span>")
        .append("<span class=\"span-name\" title=\"").append(name).append("\">").append(name).append("</span>")
        .append("<span class=\"fold-times\">&times;").append(f.count()).append("</span>")
        .append("<span class=\"fold-match\" hidden></span>")
        .append("<span class=\"span-proc\">").append(Fmt.html(s.process())).append("</span></div>");
    double left = Math.max(0, Math.min(100, 100.0 * f.startOffsetNanos() / extent));
    double width = Math.max(0, Math.min(100 - left, 100.0 * (f.endOffsetNanos() - f.startOffsetNanos()) / extent));
    timeline(h, left, width, colour(f.processIndex()), " fold-bar", " fold-label",
        "<span class=\"fold-count\">" + f.count() + "</span> spans p50 <span class=\"fold-p50\">"
            + Fmt.duration(f.medianNanos()) + "</span> max <span class=\"fold-max\">" + Fmt.duration(f.maxNanos())
            + "</span>");
    h.append("</div>\n");
  }

  /** A timeline cell: the bar at {@code left}% for {@code width}% and its label beside it (or inside). */
  private static void timeline(StringBuilder h, double left, double width, String colour, String barClass,
      String labelClass, String labelHtml) {
    h.append("<div class=\"timeline-col\"><div class=\"bar").append(barClass).append("\" style=\"left:")
        .append(pct(left / 100)).append("%;width:").append(pct(width / 100)).append("%;background:").append(colour)
        .append("\"></div><span class=\"dur-label").append(labelClass);
    double end = left + width;
    if (end < 75) {
      h.append("\" style=\"left:calc(").append(pct(end / 100)).append("% + 4px)\">");
    } else if (left > 25) {
      h.append("\" style=\"right:calc(").append(pct((100 - left) / 100)).append("% + 4px)\">");
    } else {
      h.append(" inside\" style=\"left:calc(").append(pct(left / 100)).append("% + 4px)\">");
    }
    h.append(labelHtml).append("</span></div>");
  }

  private static void row(StringBuilder h, WaterfallModel.Row r, String foldId) {
    SpanNode n = r.node();
    SpanRecord s = n.span();
    String id = Fmt.html(s.spanId());
    int proc = r.processIndex();
    h.append("<div class=\"span-row");
    if (s.isError()) {
      h.append(" error");
    }
    if (n.onCriticalPath()) {
      h.append(" on-critical-path");
    }
    if (foldId != null) {
      h.append(" in-fold");
    }
    h.append("\" id=\"row-").append(id).append("\" data-span-id=\"").append(id).append("\" data-span-name=\"")
        .append(Fmt.html(s.name())).append("\" data-parent-id=\"").append(Fmt.html(s.parentSpanId()))
        .append("\" data-depth=\"").append(n.depth()).append("\" data-process=\"").append(Fmt.html(s.process()))
        .append("\" data-critical-path=\"").append(n.onCriticalPath()).append("\" data-error=\"").append(s.isError())
        .append("\" data-start-offset-nanos=\"").append(r.startOffsetNanos()).append("\" data-end-offset-nanos=\"")
        .append(r.endOffsetNanos()).append(foldId == null ? "" : "\" data-fold-id=\"" + foldId)
        .append("\" tabindex=\"0\" aria-expanded=\"false\"").append(foldId == null ? ">" : " hidden>");
    h.append("<div class=\"name-col\" style=\"padding-left:").append(8 + n.depth() * 16).append("px\">");
    if (n.hasChildren()) {
      h.append("<button type=\"button\" class=\"toggle\" aria-expanded=\"true\" title=\"Collapse or expand the ")
          .append(n.children().size()).append(" children\">&#x25be;</button>");
    } else {
      h.append("<span class=\"toggle-spacer\"></span>");
    }
    h.append("<span class=\"swatch\" style=\"background:").append(colour(proc)).append("\"></span>")
        .append("<span class=\"span-name\" title=\"").append(Fmt.html(s.name())).append("\">")
        .append(Fmt.html(s.name())).append("</span>");
    if (s.isError()) {
      h.append("<span class=\"err-icon\" title=\"").append(Fmt.html(s.statusMessage().isEmpty() ? "error"
          : s.statusMessage())).append("\">!</span>");
    }
    h.append("<span class=\"span-proc\">").append(Fmt.html(s.process())).append("</span></div>");
    timeline(h, r.leftPercent(), r.widthPercent(), colour(proc), "", "", Fmt.duration(s.durationNanos()));
    h.append("</div>\n");
    h.append("<div class=\"span-detail\" id=\"detail-").append(id).append("\" data-span-id=\"").append(id)
        .append("\" hidden></div>\n");
  }

  private static void consumed(StringBuilder h, StepView step) {
    List<SpanRecord> rollouts = step.consumedRollouts();
    h.append("<section class=\"consumed-rollouts\">\n<h2>Consumed rollouts (").append(rollouts.size())
        .append(")</h2>\n");
    if (rollouts.isEmpty()) {
      h.append("<p class=\"empty\">This step links to no rollouts.</p>\n</section>\n");
      return;
    }
    h.append("<p>From steps: ");
    if (step.consumedFromSteps().isEmpty()) {
      h.append("none");
    }
    for (int i = 0; i < step.consumedFromSteps().size(); i++) {
      h.append(i == 0 ? "" : ", ").append(step.consumedFromSteps().get(i));
    }
    h.append("</p>\n<table class=\"kv\"><thead><tr><th>Span</th><th>Step</th><th>Process</th><th>Duration</th>")
        .append("<th>Trace ID</th><th>Span ID</th></tr></thead><tbody>\n");
    for (SpanRecord r : rollouts) {
      boolean missing = StepView.isMissing(r);
      OptionalLong from = step.consumedStep(r);
      h.append("<tr class=\"consumed-rollout").append(missing ? " missing" : "").append("\" data-trace-id=\"")
          .append(Fmt.html(r.traceId())).append("\" data-span-id=\"").append(Fmt.html(r.spanId())).append("\">")
          .append("<td>").append(Fmt.html(r.name())).append("</td><td>")
          .append(from.isPresent() ? Long.toString(from.getAsLong()) : "-").append("</td><td>")
          .append(missing ? "-" : Fmt.html(r.process())).append("</td><td>")
          .append(missing ? "-" : Fmt.duration(r.durationNanos())).append("</td><td class=\"mono\">")
          .append(Fmt.html(r.traceId())).append("</td><td class=\"mono\">").append(Fmt.html(r.spanId()))
          .append("</td></tr>\n");
    }
    h.append("</tbody></table>\n</section>\n");
  }

  private static String colour(int index) {
    return PALETTE[index % PALETTE.length];
  }

  /** A share as a percentage with 4 decimals (CSS). */
  private static String pct(double share) {
    return String.format(Locale.ROOT, "%.4f", Math.max(0, share) * 100);
  }

  // ---------------------------------------------------------------- data

  private static String json(WaterfallModel model, RunView run) {
    StepView step = model.step();
    long t0 = model.traceStartNanos();
    ObjectNode o = NODES.objectNode();
    o.put("runId", run == null ? "" : run.runId());
    o.put("traceId", step.traceId());
    o.put("step", step.step());
    o.put("mode", step.mode());
    o.put("startEpochNanos", Long.toString(step.startNanos()));
    o.put("traceStartEpochNanos", Long.toString(t0));
    o.put("durationNanos", step.durationNanos());
    o.put("traceDurationNanos", step.traceDurationNanos());
    o.put("depth", step.depth());
    o.put("spanCount", step.spanCount());
    o.put("errorCount", step.errorCount());
    ArrayNode procs = o.putArray("processes");
    for (WaterfallModel.Process p : model.processes()) {
      procs.addObject().put("name", p.name()).put("service", p.service()).put("color", colour(p.index()));
    }
    ObjectNode phases = o.putObject("phaseNanos");
    model.phases().forEach(p -> phases.put(p.key(), p.nanos()));
    ObjectNode goodput = o.putObject("goodput");
    model.goodput().forEach(g -> goodput.put(g.name(), g.share()));
    ArrayNode spans = o.putArray("spans");
    for (WaterfallModel.Row r : model.rows()) {
      SpanNode n = r.node();
      SpanRecord s = n.span();
      ObjectNode x = spans.addObject();
      x.put("id", s.spanId());
      x.put("parentId", s.parentSpanId());
      x.put("name", s.name());
      x.put("service", s.service());
      x.put("process", s.process());
      x.put("processIndex", r.processIndex());
      x.put("depth", n.depth());
      x.put("startOffsetNanos", r.startOffsetNanos());
      x.put("durationNanos", s.durationNanos());
      x.put("kind", s.kind());
      x.put("kindName", s.kind() >= 0 && s.kind() < KINDS.length ? KINDS[s.kind()] : Integer.toString(s.kind()));
      x.put("status", s.statusCode() == 2 ? "error" : s.statusCode() == 1 ? "ok" : "unset");
      x.put("statusMessage", s.statusMessage());
      x.put("error", s.isError());
      x.put("criticalPath", n.onCriticalPath());
      x.put("childCount", n.children().size());
      x.set("attributes", pairs(s.attributes()));
      x.set("resource", pairs(s.resource()));
      ArrayNode events = x.putArray("events");
      for (SpanRecord.Event e : s.events()) {
        events.addObject().put("name", e.name()).put("offsetNanos", e.timeNanos() - t0)
            .set("attributes", pairs(e.attributes()));
      }
      ArrayNode links = x.putArray("links");
      for (SpanRecord.Link l : s.links()) {
        ObjectNode lo = links.addObject().put("traceId", l.traceId()).put("spanId", l.spanId());
        lo.set("attributes", pairs(l.attributes()));
        SpanRecord target = run == null ? null : run.span(l.traceId(), l.spanId()).orElse(null);
        if (target == null) {
          lo.putNull("target");
        } else {
          ObjectNode t = lo.putObject("target").put("name", target.name()).put("process", target.process())
              .put("durationNanos", target.durationNanos());
          OptionalLong st = run.stepOfTrace(l.traceId());
          if (st.isPresent()) {
            t.put("step", st.getAsLong());
          } else {
            t.putNull("step");
          }
        }
      }
    }
    ArrayNode consumed = o.putArray("consumedRollouts");
    for (SpanRecord r : step.consumedRollouts()) {
      ObjectNode c = consumed.addObject().put("traceId", r.traceId()).put("spanId", r.spanId())
          .put("name", r.name()).put("missing", StepView.isMissing(r)).put("durationNanos", r.durationNanos());
      OptionalLong st = step.consumedStep(r);
      if (st.isPresent()) {
        c.put("step", st.getAsLong());
      } else {
        c.putNull("step");
      }
    }
    try {
      return JSON.writeValueAsString(o);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write the trace data as JSON", e);
    }
  }

  /** Attributes as {@code [[key, value], ...]} sorted by key (maps' own order is not stable). */
  private static ArrayNode pairs(Map<String, Object> attrs) {
    ArrayNode a = NODES.arrayNode();
    new TreeMap<>(attrs).forEach((k, v) -> a.addArray().add(k).add(value(v)));
    return a;
  }

  private static JsonNode value(Object v) {
    if (v == null) {
      return NODES.nullNode();
    }
    if (v instanceof String s) {
      return NODES.textNode(s);
    }
    if (v instanceof Boolean b) {
      return NODES.booleanNode(b);
    }
    if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return NODES.numberNode(((Number) v).longValue());
    }
    if (v instanceof Number n) {
      double x = n.doubleValue();
      return Double.isFinite(x) ? NODES.numberNode(x) : NODES.textNode(Double.toString(x));
    }
    if (v instanceof Map<?, ?> m) {
      ObjectNode o = NODES.objectNode();
      new TreeMap<>(stringKeys(m)).forEach((k, x) -> o.set(k, value(x)));
      return o;
    }
    if (v instanceof Iterable<?> it) {
      ArrayNode a = NODES.arrayNode();
      it.forEach(x -> a.add(value(x)));
      return a;
    }
    return NODES.textNode(String.valueOf(v));
  }

  private static Map<String, Object> stringKeys(Map<?, ?> m) {
    Map<String, Object> out = new LinkedHashMap<>();
    m.forEach((k, x) -> out.put(String.valueOf(k), x));
    return out;
  }
}
