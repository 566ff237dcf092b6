package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.span;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

final class TerminalWaterfallFoldTest {
  private final TerminalWaterfall term = new TerminalWaterfall();

  /** A step whose worker ran 29 requests, one of them failed, and a second worker ran 2. */
  private static StepView step() {
    return RunView.of(TestSpans.foldStep()).step(1).orElseThrow();
  }

  @Test
  void render_foldsARunOfSameNamedSiblingsIntoOneRowWithCountMedianAndMax() {
    String text = term.render(step(), 140, false);

    List<String> folded = text.lines().filter(l -> l.contains("llm_request x29")).toList();
    assertThat(folded).singleElement().asString().contains("29 spans p50 23.0ms max 37.0ms");
    // the folded row, the failed request in a row of its own, and two siblings (too few to fold)
    assertThat(text.lines().filter(l -> l.matches(".*-llm_request\\s.*"))).hasSize(4);
    assertThat(text.lines().filter(l -> l.matches(".*-llm_request\\s.*") && l.contains(" ! "))).hasSize(1);
    assertThat(text.lines()).allSatisfy(l -> assertThat(l.length()).isLessThanOrEqualTo(140));
  }

  /**
   * As {@link #step()}, every request with its lifecycle children (queued, prefill, decode tiling it), the failed
   * one too, and a last row on worker 2 after worker 1's requests.
   */
  private static StepView stepWithLifecycles() {
    String t = TestSpans.tid(78);
    List<SpanRecord> s = new ArrayList<>();
    s.add(span(t, 1, 0, "rl.grpo.step", 0, 100).attr("rl.step", 1L).build());
    s.add(span(t, 2, 1, "rl.worker.generate", 0, 80).in(TestSpans.WORKER_1).build());
    for (int i = 0; i < 29; i++) {
      request(s, t, 100 + i, 2, 1 + i, 10 + 2 * i, false);
    }
    request(s, t, 200, 2, 40, 46, true);
    s.add(span(t, 3, 1, "rl.worker.generate", 50, 90).in(TestSpans.WORKER_2).build());
    return RunView.of(s).step(1).orElseThrow();
  }

  /** An llm_request span {@code id} and its three children (ids {@code id * 10 + 1..3}). */
  private static void request(List<SpanRecord> s, String t, int id, int parent, double start, double end,
      boolean error) {
    TestSpans.B b = span(t, id, parent, "llm_request", start, end).in(TestSpans.WORKER_1);
    s.add((error ? b.error("boom") : b).build());
    double third = (end - start) / 3;
    s.add(span(t, id * 10 + 1, id, "llm_request.queued", start, start + third).in(TestSpans.WORKER_1).build());
    s.add(span(t, id * 10 + 2, id, "llm_request.prefill", start + third, start + 2 * third)
        .in(TestSpans.WORKER_1).build());
    s.add(span(t, id * 10 + 3, id, "llm_request.decode", start + 2 * third, end).in(TestSpans.WORKER_1).build());
  }

  @Test
  void render_requestsWithLifecycleChildren_foldWithTheirChildrenAndALoneRequestShowsThem() {
    String text = term.render(stepWithLifecycles(), 140, false);

    List<String> folded = text.lines().filter(l -> l.contains("llm_request x29")).toList();
    assertThat(folded).singleElement().asString().contains("29 spans p50 23.0ms max 37.0ms");
    // the failed request is a row of its own, its three children below it, one level deeper
    List<String> rows = text.lines().filter(l -> l.matches("^[|`\\- ]*(rl\\.|llm_request).*")).toList();
    assertThat(rows).extracting(l -> l.replaceAll("^([|`\\- ]*\\S+).*", "$1")).containsExactly(
        "rl.grpo.step",
        "|-rl.worker.generate",
        "| |-llm_request",
        "| `-llm_request",
        "|   |-llm_request.queued",
        "|   |-llm_request.prefill",
        "|   `-llm_request.decode",
        "`-rl.worker.generate");
    assertThat(rows.get(2)).contains("llm_request x29");
    assertThat(rows.get(3)).contains(" ! ");
    assertThat(text.lines()).allSatisfy(l -> assertThat(l.length()).isLessThanOrEqualTo(140));
  }

  @Test
  void render_expandShowsEveryRequestsLifecycleChildren() {
    String text = term.render(stepWithLifecycles(), 140, false, true);

    assertThat(text).doesNotContain(" x29");
    assertThat(text.lines().filter(l -> l.matches(".*-llm_request\\s.*"))).hasSize(30);
    assertThat(text.lines().filter(l -> l.matches(".*-llm_request\\.(queued|prefill|decode)\\s.*"))).hasSize(90);
  }

  @Test
  void render_expandGivesOneRowPerSpan() {
    StepView step = step();
    String text = term.render(step, 140, false, true);

    assertThat(text).doesNotContain(" x29");
    assertThat(text.lines().filter(l -> l.matches(".*-llm_request\\s.*"))).hasSize(32);
  }
}
