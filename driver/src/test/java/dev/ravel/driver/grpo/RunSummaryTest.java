package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

final class RunSummaryTest {
  private Locale locale;

  @BeforeEach
  void fixLocale() {
    locale = Locale.getDefault();
    Locale.setDefault(Locale.ROOT);
  }

  @AfterEach
  void restoreLocale() {
    Locale.setDefault(locale);
  }

  @Test
  void rewardTrend_risingSeriesComparesFirstAndLastSteps() {
    List<StepRecord> steps = new ArrayList<>();
    double[] rewards = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    for (int i = 0; i < rewards.length; i++) {
      steps.add(step(i, rewards[i], 1));
    }

    assertThat(RunSummary.rewardTrend(steps, 3)).isEqualTo("reward 0.200 -> 0.700 (mean of first/last 3 steps)");
  }

  @Test
  void rewardTrend_shortRunUsesNonOverlappingHalves() {
    List<StepRecord> steps = List.of(step(0, 0, 1), step(1, 0, 1), step(2, 1, 1), step(3, 1, 1));

    assertThat(RunSummary.rewardTrend(steps, 3)).isEqualTo("reward 0.000 -> 1.000 (mean of first/last 2 steps)");
  }

  @Test
  void rewardTrend_oneStepAndNoSteps() {
    assertThat(RunSummary.rewardTrend(List.of(step(0, 0.4, 1)), 3))
        .isEqualTo("reward 0.400 -> 0.400 (mean of first/last 1 steps)");
    assertThat(RunSummary.rewardTrend(List.of(), 3)).isEqualTo("no steps");
  }

  private static StepRecord step(int i, double reward, double seconds) {
    return new StepRecord(i, "sync", reward, 0.3, 0.01, -0.02, 0.1, 128, 256.0, seconds,
        Map.of("generation", 1.0, "training", 0.25), i, 64, 0, 40, "trace-" + i);
  }
}
