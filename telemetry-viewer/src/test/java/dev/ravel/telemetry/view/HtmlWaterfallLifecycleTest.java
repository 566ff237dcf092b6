package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.sid;
import static dev.ravel.telemetry.view.TestSpans.span;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The lifecycle children of an {@code llm_request} in the HTML waterfall: rows nested under the request's. */
final class HtmlWaterfallLifecycleTest {
  private static final String[] PHASES = {SpanNames.LLM_REQUEST_QUEUED, SpanNames.LLM_REQUEST_PREFILL,
      SpanNames.LLM_REQUEST_DECODE, SpanNames.LLM_REQUEST_PREEMPTED, SpanNames.LLM_REQUEST_PREFILL,
      SpanNames.LLM_REQUEST_DECODE};

  @Test
  void render_preemptedRequest_itsPhasesAreRowsOneLevelBelowItInOrderAndItCanCollapse() {
    String t = TestSpans.tid(90);
    List<SpanRecord> s = new ArrayList<>();
    s.add(span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build());
    s.add(span(t, 2, 1, "rl.worker.generate", 0, 80).in(TestSpans.WORKER_1).build());
    s.add(span(t, 3, 2, SpanNames.LLM_REQUEST, 10, 70).in(TestSpans.WORKER_1).build());
    for (int i = 0; i < PHASES.length; i++) {
      s.add(span(t, 10 + i, 3, PHASES[i], 10 + 10 * i, 20 + 10 * i).in(TestSpans.WORKER_1).build());
    }
    RunView run = RunView.of(s);

    String doc = new HtmlWaterfall().render(run.step(1).orElseThrow(), run);

    Matcher m = Pattern.compile("<div class=\"span-row[^\"]*\" id=\"row-[0-9a-f]+\" data-span-id=\"([0-9a-f]+)\""
        + " data-span-name=\"([^\"]+)\" data-parent-id=\"([0-9a-f]*)\" data-depth=\"(\\d+)\"").matcher(doc);
    List<String> below = new ArrayList<>();
    while (m.find()) {
      if (m.group(3).equals(sid(3))) {
        assertThat(m.group(4)).as(m.group(2)).isEqualTo("3");
        below.add(m.group(2));
      }
    }
    assertThat(below).containsExactly(PHASES);
    int request = doc.indexOf("id=\"row-" + sid(3) + "\"");
    assertThat(doc.substring(request, doc.indexOf("span-detail", request)))
        .contains("class=\"toggle\"").contains("the 6 children");
  }
}
