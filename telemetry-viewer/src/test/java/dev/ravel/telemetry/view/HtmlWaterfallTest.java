package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.sid;
import static dev.ravel.telemetry.view.TestSpans.span;
import static dev.ravel.telemetry.view.TestSpans.tid;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

final class HtmlWaterfallTest {
  private static final String DATA_OPEN = "<script type=\"application/json\" id=\"trace-data\">";
  private static final String EVIL = "</script><b>x\"'";

  private final RunView run = RunView.of(TestSpans.all());
  private final StepView sync = run.step(5).orElseThrow();
  private final StepView async1 = run.step(1).orElseThrow();
  private final HtmlWaterfall html = new HtmlWaterfall();

  private static JsonNode data(String doc) throws Exception {
    int start = doc.indexOf(DATA_OPEN);
    assertThat(start).isNotNegative();
    start += DATA_OPEN.length();
    int end = doc.indexOf("</script>", start);
    return new ObjectMapper().readTree(doc.substring(start, end));
  }

  private static int count(String doc, String needle) {
    int n = 0;
    for (int i = doc.indexOf(needle); i >= 0; i = doc.indexOf(needle, i + needle.length())) {
      n++;
    }
    return n;
  }

  /** The opening tag of the row of span {@code id}. */
  private static String rowTag(String doc, String id) {
    Matcher m = Pattern.compile("<div class=\"span-row[^\"]*\" id=\"row-" + id + "\"[^>]*>").matcher(doc);
    assertThat(m.find()).as("row %s", id).isTrue();
    return m.group();
  }

  private static String rowHtml(String doc, String id) {
    int start = doc.indexOf(rowTag(doc, id));
    return doc.substring(start, doc.indexOf("<div class=\"span-detail\"", start));
  }

  @Test
  void render_isOneSelfContainedDocumentWithNoNetworkReferences() {
    String doc = html.render(sync, run);
    assertThat(doc).startsWith("<!DOCTYPE html>").endsWith("</html>\n");
    assertThat(count(doc, "<html")).isEqualTo(1);
    assertThat(doc).contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';");
    assertThat(doc).doesNotContain("http://").doesNotContain("https://");
    assertThat(doc).doesNotContainPattern("(?i)(src|href)\\s*=\\s*[\"']?\\s*(https?:)?//");
    assertThat(doc).doesNotContainPattern("(?i)<script[^>]*\\ssrc=").doesNotContainPattern("(?i)<link[^>]*stylesheet")
        .doesNotContain("@import").doesNotContain("url(");
    assertThat(count(doc, "<style>")).isEqualTo(1);
    assertThat(count(doc, "<script")).isEqualTo(2); // the data and the code
    assertThat(doc).contains("'use strict';");
  }

  @Test
  void render_embedsTheTraceDataAsJson() throws Exception {
    String doc = html.render(async1, run);
    JsonNode d = data(doc);
    assertThat(d.get("traceId").asText()).isEqualTo(TestSpans.ASYNC_1);
    assertThat(d.get("runId").asText()).isEqualTo(TestSpans.RUN);
    assertThat(d.get("step").asLong()).isEqualTo(1);
    assertThat(d.get("spans")).hasSize(async1.spanCount());
    for (int i = 0; i < async1.spanCount(); i++) {
      JsonNode s = d.get("spans").get(i);
      SpanNode n = async1.nodes().get(i);
      assertThat(s.get("id").asText()).isEqualTo(n.span().spanId());
      assertThat(s.get("name").asText()).isEqualTo(n.name());
      assertThat(s.get("depth").asInt()).isEqualTo(n.depth());
      assertThat(s.get("criticalPath").asBoolean()).isEqualTo(n.onCriticalPath());
    }
    JsonNode root = d.get("spans").get(0);
    assertThat(root.get("attributes").toString()).isEqualTo("[[\"rl.mode\",\"async\"],[\"rl.step\",1]]");
    assertThat(root.get("resource").get(0).get(0).asText()).isEqualTo("process.pid");
    assertThat(root.get("links")).hasSize(3);
    assertThat(root.get("links").get(0).get("target").get("name").asText()).isEqualTo("rl.vllm.generate");
    assertThat(root.get("links").get(0).get("target").get("step").asLong()).isZero();
    assertThat(root.get("links").get(2).get("target").isNull()).isTrue();
    assertThat(d.get("consumedRollouts")).hasSize(3);
    assertThat(d.get("consumedRollouts").get(2).get("missing").asBoolean()).isTrue();
    assertThat(d.get("goodput").get("productive").asDouble()).isEqualTo(async1.goodput().productive());
    assertThat(d.get("phaseNanos").get("policy_training").asLong()).isEqualTo(29 * TestSpans.MS);
  }

  @Test
  void render_eventsAreInTheDataRelativeToTheTraceStart() throws Exception {
    JsonNode d = data(html.render(sync, run));
    JsonNode request = d.get("spans").get(7);
    assertThat(request.get("id").asText()).isEqualTo(sid(8));
    assertThat(request.get("events").get(0).get("name").asText()).isEqualTo("preempted");
    assertThat(request.get("events").get(0).get("offsetNanos").asLong()).isEqualTo(30 * TestSpans.MS);
  }

  @Test
  void render_escapesNamesAndAttributesThatTryToBreakOutOfTheScriptOrMarkup() throws Exception {
    String t = tid(60);
    RunView v = RunView.of(List.of(
        span(t, 1, 0, "rl.grpo.step", 0, 10).attr("rl.step", 1L).build(),
        span(t, 2, 1, EVIL, 1, 5).attr(EVIL, EVIL).attr("unicode", "r\u00e9sum\u00e9 \u2713 \ud83d\ude80")
            .error(EVIL).build()));
    String doc = html.render(v.step(1).orElseThrow(), v);
    assertThat(count(doc, "</script>")).isEqualTo(2); // only the two real closing tags
    assertThat(doc).doesNotContain("<b>x").doesNotContain("</script><b>");
    assertThat(doc).contains("data-span-name=\"&lt;/script&gt;&lt;b&gt;x&quot;&#39;\"")
        .contains("<span class=\"span-name\" title=\"&lt;/script&gt;&lt;b&gt;x&quot;&#39;\">&lt;/script&gt;");
    assertThat(doc.chars()).as("the document is ASCII").allMatch(c -> c < 0x80);
    JsonNode span = data(doc).get("spans").get(1);
    assertThat(span.get("name").asText()).isEqualTo(EVIL);
    assertThat(span.get("statusMessage").asText()).isEqualTo(EVIL);
    assertThat(span.get("attributes").get(0).get(0).asText()).isEqualTo(EVIL);
    assertThat(span.get("attributes").get(0).get(1).asText()).isEqualTo(EVIL);
    assertThat(span.get("attributes").get(1).get(1).asText()).isEqualTo("r\u00e9sum\u00e9 \u2713 \ud83d\ude80");
  }

  @Test
  void render_rowsCarryTheDomHooks() {
    String doc = html.render(sync, run);
    assertThat(count(doc, "<div class=\"span-row")).isEqualTo(sync.spanCount());
    for (SpanNode n : sync.nodes()) {
      String tag = rowTag(doc, n.span().spanId());
      assertThat(tag).contains("data-span-id=\"" + n.span().spanId() + "\"")
          .contains("data-span-name=\"" + n.name() + "\"").contains("data-depth=\"" + n.depth() + "\"")
          .contains("data-parent-id=\"" + n.span().parentSpanId() + "\"");
      assertThat(doc).contains("<div class=\"span-detail\" id=\"detail-" + n.span().spanId() + "\" data-span-id=\""
          + n.span().spanId() + "\" hidden></div>");
      assertThat(rowHtml(doc, n.span().spanId()).contains("class=\"toggle\"")).isEqualTo(n.hasChildren());
    }
    assertThat(count(doc, "class=\"toggle\"")).isEqualTo((int) sync.nodes().stream().filter(SpanNode::hasChildren)
        .count());
    assertThat(doc).contains("<div class=\"waterfall\" id=\"waterfall\">").contains("id=\"expand-all\"")
        .contains("id=\"collapse-all\"").contains("id=\"show-critical-path\"");
    // the script fills the detail with .attr-key cells from the data
    assertThat(doc).contains("kvTable(s.attributes, 'attr-key', 'attr-value')");
  }

  @Test
  void render_marksErrorsRedAndTheCriticalPath() {
    String doc = html.render(sync, run);
    assertThat(rowTag(doc, sid(9))).startsWith("<div class=\"span-row error\"").contains("data-error=\"true\"");
    assertThat(rowHtml(doc, sid(9))).contains("<span class=\"err-icon\" title=\"engine failure\">!</span>");
    assertThat(rowTag(doc, sid(7))).doesNotContain("on-critical-path").contains("data-critical-path=\"false\"");
    assertThat(rowTag(doc, sid(10))).contains("span-row on-critical-path").contains("data-critical-path=\"true\"");
    assertThat(doc).contains(".error .bar{background:#e53935 !important}");
  }

  @Test
  void render_headerShowsOperationTraceStartDurationServicesDepthAndSpans() {
    String doc = html.render(sync, run);
    assertThat(doc).contains("<span class=\"root-service\">ravel-driver</span>: <span class=\"root-operation\">"
        + "rl.grpo.step</span><span class=\"step-badge\">step 5 &middot; sync</span>");
    Map<String, String> meta = Map.of("trace-id", TestSpans.SYNC_TRACE, "start", "2026-01-01 00:00:00.000 UTC",
        "duration", "100ms", "services", "3", "processes", "4", "depth", "5", "span-count", "18", "errors", "1");
    meta.forEach((k, v) -> assertThat(doc).containsPattern(
        "data-key=\"" + k + "\"><dt>[^<]+</dt><dd[^>]*>" + Pattern.quote(v) + "</dd>"));
  }

  @Test
  void render_rulerTicksBarsAndLegendFollowTheTimeline() {
    String doc = html.render(sync, run);
    assertThat(count(doc, "<span class=\"tick")).isEqualTo(5);
    assertThat(doc).contains(">25.0ms</span>").contains(">100ms</span>");
    // checkpointing: 95-98 ms of 100 ms
    assertThat(rowHtml(doc, sid(18))).contains("<div class=\"bar\" style=\"left:95.0000%;width:3.0000%;background:"
        + HtmlWaterfall.PALETTE[0] + "\">").contains(">3.00ms</span>");
    assertThat(count(doc, "<li class=\"legend-item\"")).isEqualTo(4);
    assertThat(doc).contains("<li class=\"legend-item\" data-process=\"trainer/300\"><span class=\"swatch\" "
        + "style=\"background:" + HtmlWaterfall.PALETTE[3] + "\">");
    assertThat(rowHtml(doc, sid(14))).contains("background:" + HtmlWaterfall.PALETTE[3]);
  }

  @Test
  void render_listsConsumedRolloutsAndMarksMissingOnes() {
    String doc = html.render(async1, run);
    assertThat(doc).contains("<h2>Consumed rollouts (3)</h2>").contains("<p>From steps: 0</p>");
    assertThat(count(doc, "<tr class=\"consumed-rollout\"")).isEqualTo(2);
    assertThat(doc).contains("<tr class=\"consumed-rollout missing\" data-trace-id=\"" + TestSpans.MISSING_TRACE
        + "\" data-span-id=\"" + sid(0xff) + "\"><td>(missing span)</td>");
  }

  @Test
  void render_worksWithoutTheRun() throws Exception {
    String doc = html.render(async1, null);
    assertThat(doc).doesNotContain("data-key=\"run-id\"");
    assertThat(data(doc).get("spans").get(0).get("links").get(0).get("target").isNull()).isTrue();
  }

  @Test
  void render_isDeterministicWhateverTheInputOrder() {
    RunView other = RunView.of(TestSpans.shuffled(TestSpans.all(), 5));
    for (StepView s : run.steps()) {
      assertThat(html.render(other.step(s.step()).orElseThrow(), other)).isEqualTo(html.render(s, run));
    }
  }

  // ---------------------------------------------------------------- fold, zoom, search

  @Test
  void render_foldsTheRunsTheTerminalFoldsIntoOneRowWithCountMedianAndMax() {
    StepView step = RunView.of(TestSpans.foldStep()).step(1).orElseThrow();
    String doc = html.render(step, null);

    assertThat(count(doc, "<div class=\"fold-row")).isEqualTo(1);
    Matcher tag = Pattern.compile("<div class=\"fold-row[^\"]*\" id=\"fold-0\"[^>]*>").matcher(doc);
    assertThat(tag.find()).isTrue();
    assertThat(tag.group()).contains("data-span-name=\"llm_request\"").contains("data-fold-count=\"29\"")
        .contains("data-fold-p50-nanos=\"" + 23 * TestSpans.MS + "\"")
        .contains("data-fold-max-nanos=\"" + 37 * TestSpans.MS + "\"").contains("data-depth=\"2\"")
        .contains("data-parent-id=\"" + sid(2) + "\"").contains("data-start-offset-nanos=\"" + TestSpans.MS + "\"")
        .contains("data-end-offset-nanos=\"" + 66 * TestSpans.MS + "\"");
    String foldRow = doc.substring(tag.start(), doc.indexOf("<div class=\"span-row", tag.start()));
    assertThat(foldRow).contains("<button type=\"button\" class=\"fold-toggle\" aria-expanded=\"false\"")
        .contains("<span class=\"fold-count\">29</span> spans p50 <span class=\"fold-p50\">23.0ms</span> max "
            + "<span class=\"fold-max\">37.0ms</span>")
        .contains("<div class=\"bar fold-bar\" style=\"left:1.0000%;width:65.0000%;");
    // the terminal says the same of the same spans
    assertThat(new TerminalWaterfall().render(step, 140, false)).contains("llm_request x29")
        .contains("29 spans p50 23.0ms max 37.0ms");
    // the folded spans keep their own rows, hidden until unfolded, right after the fold's row
    for (int i = 0; i < 29; i++) {
      assertThat(rowTag(doc, sid(100 + i))).containsPattern("^<div class=\"span-row[^\"]* in-fold\"")
          .contains("data-fold-id=\"fold-0\"").endsWith(" hidden>");
    }
    assertThat(doc.indexOf(rowTag(doc, sid(100)))).isGreaterThan(tag.start());
    assertThat(rowTag(doc, sid(200))).doesNotContain("data-fold-id").doesNotContain(" hidden>");
    assertThat(rowTag(doc, sid(300))).doesNotContain("data-fold-id");
    assertThat(count(doc, "<div class=\"span-row")).isEqualTo(step.spanCount());
  }

  @Test
  void render_foldRowEscapesTheSpanName() {
    String t = tid(80);
    List<dev.ravel.telemetry.traces.SpanRecord> s = new java.util.ArrayList<>();
    s.add(span(t, 1, 0, "rl.grpo.step", 0, 10).attr("rl.step", 1L).build());
    for (int i = 0; i < 3; i++) {
      s.add(span(t, 10 + i, 1, EVIL, i, i + 1).build());
    }
    String doc = html.render(RunView.of(s).step(1).orElseThrow(), null);

    String body = doc.substring(0, doc.indexOf(DATA_OPEN));
    assertThat(count(body, "<div class=\"fold-row")).isEqualTo(1);
    assertThat(body).doesNotContain("<b>x").contains("data-span-name=\"&lt;/script&gt;&lt;b&gt;x&quot;&#39;\"");
  }

  @Test
  void render_rowsCarryTheirOffsetsAndThePageHasSearchAndZoomControls() {
    String doc = html.render(sync, run);
    assertThat(rowTag(doc, sid(18))).contains("data-start-offset-nanos=\"" + 95 * TestSpans.MS + "\"")
        .contains("data-end-offset-nanos=\"" + 98 * TestSpans.MS + "\"");
    assertThat(doc).contains("<input type=\"search\" id=\"span-search\"").contains("id=\"search-count\"")
        .contains("id=\"zoom-from\"").contains("id=\"zoom-to\"").contains("id=\"zoom-apply\"")
        .contains("id=\"zoom-reset\"").contains("<span id=\"zoom-range\" class=\"zoom-range\" aria-live=\"polite\">"
            + "whole trace, 100ms</span>").contains("<div class=\"zoom-selection\" hidden></div>");
    assertThat(count(doc, "<div class=\"fold-row")).isZero(); // no run of three in the sync step
  }
}
