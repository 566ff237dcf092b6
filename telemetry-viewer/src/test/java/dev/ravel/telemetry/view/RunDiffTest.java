package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.span;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Two runs side by side: medians per phase and their ratio, and the configuration keys that differ. */
final class RunDiffTest {
  /** Steps 1..n, each {@code gen} ms of generation then {@code train} ms of training. */
  static List<SpanRecord> run(int n, double gen, double train, boolean refit) {
    List<SpanRecord> out = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      String t = TestSpans.tid(1000 * (refit ? 2 : 1) + i);
      double total = gen + train + (refit ? 5 : 0);
      out.add(span(t, 1, 0, "rl.grpo.step", 0, total).attr("rl.step", (long) i).build());
      out.add(span(t, 2, 1, "rl.grpo.generation", 0, gen).build());
      out.add(span(t, 3, 1, "rl.grpo.policy_training", gen, gen + train).build());
      if (refit) {
        out.add(span(t, 4, 1, "rl.grpo.refit", gen + train, total).build());
      }
    }
    return out;
  }

  static Map<String, Object> config(String runId, int workers) {
    Map<String, Object> c = new LinkedHashMap<>();
    c.put("telemetry.run_id", runId);
    c.put("generation.workers", workers);
    c.put("grpo.steps", 3);
    return c;
  }

  @Test
  void of_twoRuns_mediansPerPhaseRatioAndTheKeysThatDiffer() {
    RunDiff d = RunDiff.of("a", RunView.of(run(3, 40, 20, false)), config("a", 2), "b", RunView.of(run(3, 20, 20, true)),
        config("b", 4));

    assertThat(d.rows()).extracting(RunDiff.Row::phase).containsExactly("step", "generation", "policy_training",
        "refit");
    RunDiff.Row gen = d.rows().get(1);
    assertThat(gen.a()).isEqualTo(40_000_000L);
    assertThat(gen.b()).isEqualTo(20_000_000L);
    assertThat(gen.ratio()).isEqualTo(0.5);
    RunDiff.Row refit = d.rows().get(3);
    assertThat(refit.a()).isNull();
    assertThat(refit.stepsB()).isEqualTo(3);
    assertThat(refit.ratio()).isNaN();
    assertThat(d.changes()).singleElement().satisfies(c -> {
      assertThat(c.key()).isEqualTo("generation.workers");
      assertThat(c.a()).isEqualTo(2);
      assertThat(c.b()).isEqualTo(4);
    });

    String text = d.render();
    assertThat(text).contains("A = a").contains("B = b").containsPattern("generation\\s+40\\.0ms\\s+20\\.0ms\\s+0\\.50x")
        .contains("config keys that differ (1):").containsPattern("generation\\.workers\\s+A: 2\\s+B: 4")
        .doesNotContain("telemetry.run_id");
  }

  @Test
  void of_configUnknown_saysSoAndComparesThePhases() {
    RunDiff d = RunDiff.of("a", RunView.of(run(2, 10, 10, false)), null, "b", RunView.of(run(2, 10, 10, false)),
        config("b", 2));
    assertThat(d.configsKnown()).isFalse();
    assertThat(d.render()).contains("config: not compared");
    assertThat(d.rows().get(0).ratio()).isEqualTo(1.0);
  }

  @Test
  void median_oddAndEvenCountsAndNone() {
    assertThat(RunDiff.median(List.of(5L, 1L, 3L))).isEqualTo(3L);
    assertThat(RunDiff.median(List.of(4L, 1L, 3L, 2L))).isEqualTo(2L);
    assertThat(RunDiff.median(List.of())).isNull();
  }
}
