package dev.ravel.workers.reward;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.workers.grpo.Scoring;
import dev.ravel.workers.task.Problem;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class RewardScoresTest {
  private static RewardScores scores(double... rewards) {
    double[] half = new double[rewards.length];
    java.util.Arrays.fill(half, 0.5);
    List<String> texts = java.util.stream.IntStream.range(0, rewards.length).mapToObj(i -> "t" + rewards[i]).toList();
    return new RewardScores(rewards, texts, Map.of("half", half), 0);
  }

  @Test
  void concat_joinsRewardsTextsAndComponentsInOrder() {
    RewardScores all = RewardScores.concat(List.of(scores(1, 2), scores(3)));

    assertThat(all.rewards()).containsExactly(1, 2, 3);
    assertThat(all.texts()).containsExactly("t1.0", "t2.0", "t3.0");
    assertThat(all.components().get("half")).containsExactly(0.5, 0.5, 0.5);
    assertThat(all.slice(1, 3)).isEqualTo(scores(2, 3));
  }

  @Test
  void concat_partsWithOtherComponents_isRefusedNamingBoth() {
    RewardScores plain = RewardScores.of(new double[] {1}, List.of("x"));

    assertThatThrownBy(() -> RewardScores.concat(List.of(scores(1), plain)))
        .hasMessageContaining("[half]").hasMessageContaining("[]");
  }

  @Test
  void constructor_countsThatDoNotMatch_areRefused() {
    assertThatThrownBy(() -> RewardScores.of(new double[] {1, 2}, List.of("x")))
        .hasMessage("1 texts for 2 rewards");
    assertThatThrownBy(() -> new RewardScores(new double[] {1}, List.of("x"), Map.of("c", new double[2]), 0))
        .hasMessage("component 'c' has 2 values for 1 rewards");
    assertThatThrownBy(() -> RewardScores.of(new double[] {Double.NaN}, List.of("x")))
        .hasMessageContaining("not a finite number");
    assertThatThrownBy(() -> new RewardScores(new double[] {1}, List.of("x"), Map.of(), 2))
        .hasMessage("failed must be 0..1, got 2");
  }

  @Test
  void scoring_keepsTheTextsAndTheCompletionsComponents() {
    RewardScores s = new RewardScores(new double[] {0, 0}, List.of("a", "b"), Map.of("c", new double[] {3, 4}), 2);

    assertThat(s.scoring(1, new Problem("1+1=", "2"))).isEqualTo(new Scoring("1+1=", "b", "2", Map.of("c", 4.0), true));
  }
}
