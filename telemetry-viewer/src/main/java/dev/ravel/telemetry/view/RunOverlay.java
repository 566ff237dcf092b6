package dev.ravel.telemetry.view;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Several runs on one HTML page: every curve of {@link RunReport} with one series per run (the step on the x
 * axis), a legend by run id, a table of the runs and the configuration keys whose values differ among them.
 * The page is the report's own ({@code report.css}, {@code report.js}, which draws an overlay when the data
 * holds {@code runs}); it needs no network either.
 *
 * <p>DOM hooks (stable, for tests and tools): {@code ul#run-legend} with an {@code li.run-entry} per run
 * ({@code data-run}); {@code table#config-diff} with a {@code tr.config-key} per differing key
 * ({@code data-key}); {@code table#runs} with a {@code tr.run-row} per run; charts {@code svg.chart} whose
 * {@code .point}s carry {@code data-series} (the run id) and {@code data-step}.
 */
public final class RunOverlay {
  /** At most this many runs on one page (the palette's colours; more would not be told apart). */
  public static final int MAX_RUNS = 8;

  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private final List<RunReport> runs;
  private final List<String> differing;
  private final boolean configsKnown;

  private RunOverlay(List<RunReport> runs, List<String> differing, boolean configsKnown) {
    this.runs = List.copyOf(runs);
    this.differing = List.copyOf(differing);
    this.configsKnown = configsKnown;
  }

  /**
   * The overlay of {@code runs}, in the order given (the legend's and the colours').
   *
   * @throws IllegalArgumentException for fewer than 2 or more than {@link #MAX_RUNS} runs, or a run given twice
   */
  public static RunOverlay of(List<RunReport> runs) {
    if (runs.size() < 2 || runs.size() > MAX_RUNS) {
      throw new IllegalArgumentException("an overlay takes 2 to " + MAX_RUNS + " runs, got " + runs.size());
    }
    Set<String> seen = new HashSet<>();
    for (RunReport r : runs) {
      if (!seen.add(r.runId())) {
        throw new IllegalArgumentException("run '" + r.runId() + "' is given twice");
      }
    }
    List<Map<String, Object>> configs = new ArrayList<>();
    runs.forEach(r -> {
      if (r.config() != null) {
        configs.add(r.config());
      }
    });
    boolean known = configs.size() == runs.size();
    return new RunOverlay(runs, known ? RunDiff.differingKeys(configs) : List.of(), known);
  }

  /** {@return the configuration keys whose values differ among the runs (the run id left out), sorted} */
  public List<String> differingKeys() {
    return differing;
  }

  /** {@return whether every run's configuration was known (its run.json read)} */
  public boolean configsKnown() {
    return configsKnown;
  }

  /** {@return the runs' ids, in order} */
  public List<String> runIds() {
    return runs.stream().map(RunReport::runId).toList();
  }

  /** {@return the page} */
  public String render() {
    ObjectNode data = data();
    StringBuilder h = new StringBuilder(64 * 1024);
    String title = "Ravel runs " + String.join(", ", runIds());
    RunReport.head(h, title, "", "<body class=\"overlay\">\n");
    h.append("<header class=\"run-header\">\n<h1>").append(runs.size()).append(" runs compared</h1>\n")
        .append("<ul id=\"run-legend\" class=\"run-legend\">\n");
    for (int i = 0; i < runs.size(); i++) {
      h.append("<li class=\"run-entry\" data-run=\"").append(Fmt.html(runs.get(i).runId())).append("\" data-index=\"")
          .append(i).append("\"><span class=\"swatch\"></span>").append(Fmt.html(runs.get(i).runId()))
          .append("</li>\n");
    }
    h.append("</ul>\n");
    if (!configsKnown) {
      h.append("<p class=\"config-diff\">Configurations not compared: a run has no run.json.</p>\n");
    } else if (differing.isEmpty()) {
      h.append("<p class=\"config-diff\">The same configuration (the run id aside).</p>\n");
    } else {
      h.append("<table id=\"config-diff\" class=\"config-diff\">\n<caption>Configuration keys that differ (")
          .append(differing.size()).append(")</caption>\n<thead><tr><th>key</th>");
      runs.forEach(r -> h.append("<th>").append(Fmt.html(r.runId())).append("</th>"));
      h.append("</tr></thead>\n<tbody>\n");
      for (String k : differing) {
        h.append("<tr class=\"config-key\" data-key=\"").append(Fmt.html(k)).append("\"><td>").append(Fmt.html(k))
            .append("</td>");
        runs.forEach(r -> {
          Object v = r.config().get(k);
          h.append("<td>").append(Fmt.html(v == null ? "(unset)" : Fmt.clean(String.valueOf(v)))).append("</td>");
        });
        h.append("</tr>\n");
      }
      h.append("</tbody>\n</table>\n");
    }
    h.append("</header>\n<main>\n<section class=\"steps\">\n<table id=\"runs\">\n<thead><tr><th>run</th><th>mode</th>")
        .append("<th>status</th><th>steps</th><th>median step</th><th>reward, last step</th></tr></thead>\n<tbody>\n");
    for (JsonNode r : data.get("runs")) {
      JsonNode steps = r.get("steps");
      List<Long> times = new ArrayList<>();
      steps.forEach(s -> {
        if (s.path("step_s").isNumber()) {
          times.add(Math.round(s.get("step_s").asDouble() * 1e9));
        }
      });
      Long median = RunDiff.median(times);
      JsonNode last = steps.isEmpty() ? null : steps.get(steps.size() - 1);
      h.append("<tr class=\"run-row\" data-run=\"").append(Fmt.html(r.get("id").asText())).append("\">")
          .append(RunReport.td(r.get("id").asText()))
          .append(RunReport.td(r.path("run").path("mode").asText("")))
          .append(RunReport.td(r.path("run").path("status").asText("running or stopped")))
          .append(RunReport.td(Integer.toString(steps.size())))
          .append(RunReport.td(median == null ? "" : Fmt.duration(median)))
          .append(RunReport.td(last == null || !last.path("reward_mean").isNumber() ? ""
              : String.format(java.util.Locale.ROOT, "%.3f", last.get("reward_mean").asDouble())))
          .append("</tr>\n");
    }
    h.append("</tbody>\n</table>\n</section>\n<section class=\"charts\">\n");
    RunReport.chart(h, "chart-reward", "Reward (mean)");
    RunReport.chart(h, "chart-kl", "KL to reference");
    RunReport.chart(h, "chart-loss", "Loss");
    RunReport.chart(h, "chart-grad-norm", "Gradient norm before clipping");
    RunReport.chart(h, "chart-learning-rate", "Learning rate");
    RunReport.chart(h, "chart-entropy", "Entropy of the sampled tokens (mean)");
    RunReport.chart(h, "chart-eval", "Eval set: reward");
    RunReport.chart(h, "chart-length", "Completion length (tokens, mean)");
    RunReport.chart(h, "chart-lag", "Policy lag of the trajectories trained (weight versions, mean)");
    RunReport.chart(h, "chart-step-time", "Step time (s)");
    RunReport.chart(h, "chart-tokens", "Tokens per second");
    h.append("</section>\n</main>\n");
    List<String> problems = new ArrayList<>();
    runs.forEach(r -> r.problems().forEach(p -> problems.add(r.runId() + ": " + p)));
    if (!problems.isEmpty()) {
      h.append("<section class=\"problems\"><h2>Unread input</h2><ul>\n");
      problems.stream().limit(50).forEach(p -> h.append("<li>").append(Fmt.html(p)).append("</li>\n"));
      h.append("</ul></section>\n");
    }
    h.append("<script type=\"application/json\" id=\"report-data\">").append(Fmt.scriptJson(RunReport.write(data)))
        .append("</script>\n<script>\n").append(WaterfallAssets.read("report.js", "</script")).append("</script>\n")
        .append("</body>\n</html>\n");
    return h.toString();
  }

  /** The page's data: {@code runs}, each its report's run and step rows, and the differing keys. */
  ObjectNode data() {
    ObjectNode root = NODES.objectNode();
    ArrayNode out = root.putArray("runs");
    for (RunReport r : runs) {
      ObjectNode one = r.data();
      ObjectNode o = out.addObject();
      o.put("id", r.runId());
      o.set("run", one.get("run"));
      o.set("steps", one.get("steps"));
    }
    ArrayNode keys = root.putArray("config_diff");
    differing.forEach(keys::add);
    return root;
  }
}
