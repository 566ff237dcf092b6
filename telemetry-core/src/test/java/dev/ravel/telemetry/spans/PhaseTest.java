package dev.ravel.telemetry.spans;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.config.SpanGroup;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

final class PhaseTest {
  @Test
  void values_areInPipelineOrderWithTheirSpanNames() {
    assertThat(Arrays.stream(Phase.values()).map(Phase::spanName).toList()).containsExactly(
        "rl.grpo.data_processing", "rl.grpo.refit", "rl.grpo.evaluate", "rl.grpo.generation", "rl.grpo.reward_calculation",
        "rl.grpo.policy_and_reference_logprobs", "rl.grpo.advantage_calculation", "rl.grpo.policy_training",
        "rl.grpo.checkpointing", "rl.idle.buffer_starvation", "rl.idle.refit_bubble");
  }

  @Test
  void bucket_learningIsProductiveWaitingIsIdleTheRestOverhead() {
    assertThat(List.of(Phase.GENERATION, Phase.REWARD, Phase.LOGPROBS, Phase.ADVANTAGE, Phase.TRAINING))
        .allSatisfy(p -> assertThat(p.bucket()).isEqualTo(Bucket.PRODUCTIVE));
    assertThat(List.of(Phase.DATA_PROCESSING, Phase.REFIT, Phase.EVALUATION, Phase.CHECKPOINTING))
        .allSatisfy(p -> assertThat(p.bucket()).isEqualTo(Bucket.OVERHEAD));
    assertThat(List.of(Phase.BUFFER_STARVATION, Phase.REFIT_BUBBLE))
        .allSatisfy(p -> assertThat(p.bucket()).isEqualTo(Bucket.IDLE));
  }

  @Test
  void bucketValue_isNemoRlsLowercaseName() {
    assertThat(Arrays.stream(Bucket.values()).map(Bucket::value).toList())
        .containsExactly("productive", "overhead", "idle", "wasted");
  }

  @Test
  void progressLabel_isTheSpanGroupsNameSoTrainingPhasesAddUp() {
    assertThat(Phase.LOGPROBS.progressLabel()).isEqualTo("training");
    assertThat(Phase.ADVANTAGE.progressLabel()).isEqualTo("training");
    assertThat(Phase.TRAINING.progressLabel()).isEqualTo("training");
    assertThat(Phase.GENERATION.progressLabel()).isEqualTo("generation");
    assertThat(Phase.REWARD.progressLabel()).isEqualTo("reward");
    assertThat(Phase.BUFFER_STARVATION.group()).isEqualTo(SpanGroup.IDLE);
    assertThat(Phase.REFIT_BUBBLE.progressLabel()).isEqualTo("idle");
  }

  @Test
  void key_dropsTheGrpoPrefixAndKeepsIdleQualified() {
    assertThat(Phase.REWARD.key()).isEqualTo("reward_calculation");
    assertThat(Phase.REFIT_BUBBLE.key()).isEqualTo("idle.refit_bubble");
    assertThat(Phase.keyOf("rl.grpo.something_new")).isEqualTo("something_new");
    assertThat(Phase.keyOf("rl.worker.generate")).isEqualTo("rl.worker.generate");
  }

  @Test
  void ofSpanName_andOfKey_findEveryPhaseAndNothingElse() {
    for (Phase p : Phase.values()) {
      assertThat(Phase.ofSpanName(p.spanName())).contains(p);
      assertThat(Phase.ofKey(p.key())).contains(p);
    }
    assertThat(Phase.ofSpanName(SpanNames.GRPO_STEP)).isEmpty();
    assertThat(Phase.ofKey("step")).isEmpty();
  }

  @Test
  void labels_areDistinct() {
    assertThat(Arrays.stream(Phase.values()).map(Phase::label).distinct()).hasSize(Phase.values().length);
  }

  @Test
  void isIdle_anyIdleSpanNameCounts() {
    assertThat(Phase.isIdle(Phase.BUFFER_STARVATION.spanName())).isTrue();
    assertThat(Phase.isIdle("rl.idle.something_else")).isTrue();
    assertThat(Phase.isIdle(Phase.REFIT.spanName())).isFalse();
  }
}
