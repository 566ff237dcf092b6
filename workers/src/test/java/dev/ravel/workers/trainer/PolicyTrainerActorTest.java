package dev.ravel.workers.trainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.Sampling;
import dev.ravel.workers.model.TinyLm;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The trainer's logic on an actor built outside Ray (its telemetry is off without
 * {@code RAVEL_TELEMETRY_RUN_ID}), on hand-made batches of two groups of four whose completions differ in
 * length.
 */
final class PolicyTrainerActorTest {
  private static final CharTokenizer TOKENIZER = CharTokenizer.arithmetic();
  private static final int EOS = TOKENIZER.eos();
  private static final ModelSpec SPEC = ModelSpec.tiny(TOKENIZER.vocabSize());
  private static final GrpoConfig CONFIG = GrpoConfig.builder().groupSize(4).learningRate(0.01).build();
  private static final ModelWeights INITIAL = ModelWeights.init(SPEC, 1);
  private static final int[][] COMPLETIONS = {{3, EOS}, {4, 1, EOS}, {EOS}, {0, 0, EOS}, {7, EOS}, {7, 7, EOS},
      {1, EOS}, {EOS}};
  private static final double[] REWARDS = {1, 0, 0, 0, 1, 1, 0, 0};

  @Test
  void weights_beforeTrainingAreTheInitialWeights() {
    ModelWeights w = trainer().weights();

    assertThat(w.version()).isZero();
    assertThat(w.params()).containsExactly(INITIAL.params());
  }

  @Test
  void logprobs_onPolicyBatchGivesItsBehaviourLogProbsPerTokenMeanAndNoKl() {
    List<Trajectory> batch = batch("a", INITIAL, "1+2=", "3+4=");

    LogProbSummary s = trainer().logprobs(batch);

    // mean over all tokens, not over sequence means: completions have 1 to 3 tokens
    double sum = 0;
    long tokens = 0;
    for (Trajectory t : batch) {
      for (float lp : t.logprobs()) {
        sum += lp;
        tokens++;
      }
    }
    assertThat(s.tokens()).isEqualTo(tokens).isEqualTo(17);
    assertThat(s.policy()).isCloseTo(sum / tokens, within(1e-6));
    assertThat(s.reference()).isCloseTo(sum / tokens, within(1e-6));
    assertThat(s.kl()).isCloseTo(0.0, within(1e-9));
  }

  @Test
  void logprobs_emptyBatchGivesZerosNotNaN() {
    LogProbSummary s = trainer().logprobs(List.of());

    assertThat(s).isEqualTo(new LogProbSummary(0, 0, 0, 0));
  }

  @Test
  void logprobs_afterTrainingThePolicyMovesAwayFromTheFrozenReference() {
    PolicyTrainerActor trainer = trainer();
    List<Trajectory> batch = batch("a", INITIAL, "1+2=", "3+4=");
    LogProbSummary before = trainer.logprobs(batch);

    trainer.train(batch);
    trainer.train(batch);
    LogProbSummary after = trainer.logprobs(batch);

    assertThat(after.reference()).isEqualTo(before.reference());
    assertThat(after.policy()).isNotEqualTo(before.policy());
    assertThat(after.kl()).isPositive().isFinite();
    assertThat(after.tokens()).isEqualTo(before.tokens());
  }

  @Test
  void train_eachStepIncrementsTheWeightsVersionAndPublishesTheNewWeights() {
    PolicyTrainerActor trainer = trainer();
    List<Trajectory> batch = batch("a", INITIAL, "1+2=", "3+4=");

    TrainOutcome first = trainer.train(batch);
    TrainOutcome second = trainer.train(batch);
    TrainOutcome third = trainer.train(batch);

    assertThat(List.of(first, second, third)).extracting(o -> o.weights().version()).containsExactly(1L, 2L, 3L);
    assertThat(trainer.weights().version()).isEqualTo(3);
    assertThat(trainer.weights().params()).containsExactly(third.weights().params());
    assertThat(first.weights().params()).isNotEqualTo(INITIAL.params());
  }

  @Test
  void train_onPolicyStepReportsFiniteMetricsAndTheTokensTrainedOn() {
    List<Trajectory> batch = batch("a", INITIAL, "1+2=", "3+4=");

    TrainOutcome o = trainer().train(batch);

    assertThat(o.metrics().loss()).isFinite();
    assertThat(o.metrics().kl()).isCloseTo(0.0, within(1e-9));
    assertThat(o.metrics().meanRatio()).isCloseTo(1.0, within(1e-6));
    assertThat(o.metrics().clipFraction()).isZero();
    assertThat(o.metrics().gradNorm()).isPositive().isFinite();
    assertThat(o.metrics().tokens()).isEqualTo(17);
  }

  @Test
  void train_staleBatchReportsFinitePositiveKlAndRatiosAwayFromOne() {
    PolicyTrainerActor trainer = trainer();
    List<Trajectory> batch = batch("a", INITIAL, "1+2=", "3+4=");
    trainer.train(batch);
    trainer.train(batch);

    TrainOutcome o = trainer.train(batch);

    assertThat(o.metrics().loss()).isFinite();
    assertThat(o.metrics().kl()).isPositive().isFinite();
    assertThat(o.metrics().meanRatio()).isFinite().isNotCloseTo(1.0, within(1e-6));
    assertThat(o.metrics().clipFraction()).isBetween(0.0, 1.0);
    assertThat(o.metrics().gradNorm()).isFinite();
  }

  @Test
  void train_rightAfterLogprobsOfTheSameBatchMatchesTrainingWithoutThem() {
    PolicyTrainerActor withLogprobs = trainer();
    PolicyTrainerActor without = trainer();
    List<Trajectory> first = batch("s0", INITIAL, "1+2=", "3+4=");
    withLogprobs.train(first);
    without.train(first);
    // policy and reference now differ, so reusing the wrong log-probs would show in the KL
    List<Trajectory> second = batch("s1", withLogprobs.weights(), "2+2=", "0+4=");

    withLogprobs.logprobs(second);
    TrainOutcome reused = withLogprobs.train(second);
    TrainOutcome computed = without.train(second);

    assertSameOutcome(reused, computed);
    assertThat(computed.metrics().kl()).isPositive();
  }

  @Test
  void train_afterLogprobsOfAnotherBatchUsesTheReferenceOfTheBatchItTrains() {
    PolicyTrainerActor afterOther = trainer();
    PolicyTrainerActor fresh = trainer();
    // the same shape (sizes and completion lengths), other prompts and request ids
    List<Trajectory> other = batch("x", INITIAL, "1+2=", "3+4=");
    List<Trajectory> trained = batch("y", INITIAL, "4+1=", "2+0=");

    afterOther.logprobs(other);
    TrainOutcome o = afterOther.train(trained);

    assertSameOutcome(o, fresh.train(trained));
    assertThat(o.metrics().kl()).isCloseTo(0.0, within(1e-9));
  }

  @Test
  void train_batchOfPartialGroupsFailsAndLeavesTheWeightsAlone() {
    PolicyTrainerActor trainer = trainer();
    List<Trajectory> partial = batch("a", INITIAL, "1+2=", "3+4=").subList(0, 6);

    assertThatThrownBy(() -> trainer.train(partial))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("groupSize 4");
    assertThat(trainer.weights().version()).isZero();
    assertThat(trainer.weights().params()).containsExactly(INITIAL.params());
  }

  // ---------------------------------------------------------------- helpers

  private static PolicyTrainerActor trainer() {
    return new PolicyTrainerActor(Payload.of(new TrainerSpec(INITIAL, CONFIG)));
  }

  /**
   * Two groups ({@code promptA}, then {@code promptB}) of the fixed {@link #COMPLETIONS} and
   * {@link #REWARDS}, with behaviour log-probs under {@code behaviour} and request ids
   * {@code <prefix>-p<prompt>-<sample>}.
   */
  private static List<Trajectory> batch(String prefix, ModelWeights behaviour, String promptA, String promptB) {
    TinyLm lm = TinyLm.of(behaviour);
    List<Trajectory> out = new ArrayList<>();
    for (int i = 0; i < COMPLETIONS.length; i++) {
      int[] prompt = TOKENIZER.encode(i < 4 ? promptA : promptB);
      out.add(new Trajectory(prefix + "-p" + i / 4 + "-" + i % 4, prompt, COMPLETIONS[i],
          logProbs(lm, prompt, COMPLETIONS[i]), REWARDS[i], behaviour.version(), i % 4));
    }
    return out;
  }

  private static float[] logProbs(TinyLm lm, int[] prompt, int[] completion) {
    int[] seq = new int[prompt.length + completion.length];
    System.arraycopy(prompt, 0, seq, 0, prompt.length);
    System.arraycopy(completion, 0, seq, prompt.length, completion.length);
    float[] out = new float[completion.length];
    for (int t = 0; t < out.length; t++) {
      out[t] = Sampling.logProb(lm.logits(seq, prompt.length + t), completion[t], CONFIG.temperature());
    }
    return out;
  }

  private static void assertSameOutcome(TrainOutcome actual, TrainOutcome expected) {
    assertThat(actual.weights().version()).isEqualTo(expected.weights().version());
    assertThat(actual.weights().params()).containsExactly(expected.weights().params());
    assertThat(actual.metrics().loss()).isEqualTo(expected.metrics().loss());
    assertThat(actual.metrics().kl()).isEqualTo(expected.metrics().kl());
    assertThat(actual.metrics().clipFraction()).isEqualTo(expected.metrics().clipFraction());
    assertThat(actual.metrics().meanRatio()).isEqualTo(expected.metrics().meanRatio());
    assertThat(actual.metrics().gradNorm()).isEqualTo(expected.metrics().gradNorm());
    assertThat(actual.metrics().tokens()).isEqualTo(expected.metrics().tokens());
  }
}
