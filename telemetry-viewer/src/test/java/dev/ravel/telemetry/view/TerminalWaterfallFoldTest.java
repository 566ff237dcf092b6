package dev.ravel.telemetry.view;

import static org.assertj.core.api.Assertions.assertThat;

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

  @Test
  void render_expandGivesOneRowPerSpan() {
    StepView step = step();
    String text = term.render(step, 140, false, true);

    assertThat(text).doesNotContain(" x29");
    assertThat(text.lines().filter(l -> l.matches(".*-llm_request\\s.*"))).hasSize(32);
  }
}
