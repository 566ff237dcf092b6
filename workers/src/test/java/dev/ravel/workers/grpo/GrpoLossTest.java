package dev.ravel.workers.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.Sampling;
import dev.ravel.workers.model.TinyLm;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

final class GrpoLossTest {
  private static final ModelSpec SMALL =
      ModelSpec.builder().vocabSize(6).contextTokens(3).embedDim(4).hiddenDim(5).build();
  private static final GrpoConfig CONFIG =
      GrpoConfig.builder().groupSize(4).klBeta(0.1).temperature(0.8).build();

  @Test
  void compute_gradientMatchesFiniteDifferencesOfTheLossOffPolicyWithKl() {
    ModelWeights policy = ModelWeights.init(SMALL, 1);
    TinyLm ref = TinyLm.of(ModelWeights.init(SMALL, 2));
    List<Trajectory> batch = offPolicyBatch(TinyLm.of(policy), new Random(3));
    double[] advantages = Advantages.groupRelative(rewards(batch), 4, 1e-6);
    float[][] refLogProbs = logProbs(ref, batch);

    GrpoLoss.Result r = GrpoLoss.compute(TinyLm.of(policy), batch, advantages, grpoScales(batch), refLogProbs, null,
        CONFIG);

    assertThat(r.measures().kl()).isPositive(); // the reference differs, so the KL term is exercised
    assertThat(r.measures().meanRatio()).isNotEqualTo(1.0); // and the importance ratio
    float[] p = policy.params().clone();
    float h = 5e-3f;
    for (int k = 0; k < p.length; k++) {
      float saved = p[k];
      p[k] = saved + h;
      double up = loss(p, batch, advantages, refLogProbs);
      p[k] = saved - h;
      double down = loss(p, batch, advantages, refLogProbs);
      p[k] = saved;
      double numeric = (up - down) / ((double) (saved + h) - (double) (saved - h));
      double analytic = r.gradient()[k];
      assertThat(Math.abs(analytic - numeric))
          .as("param %d: analytic %s vs finite difference %s", k, analytic, numeric)
          .isLessThanOrEqualTo(1e-2 * Math.max(Math.abs(analytic), Math.abs(numeric)) + 1e-5);
    }
  }

  @Test
  void compute_averagesTokensWithinSequencesThenOverSequences() {
    // on-policy, reference = policy: the loss is -mean_i A_i exactly, whatever the completion lengths
    TinyLm lm = TinyLm.of(ModelWeights.init(SMALL, 1));
    List<Trajectory> batch = new ArrayList<>();
    int[] prompt = {1, 2};
    int[][] completions = {{3}, {4, 0, 5}, {0, 5}, {2, 2, 2, 2, 5}};
    double[] rewards = {1, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
      batch.add(new Trajectory("r", prompt, completions[i], logProbs(lm, prompt, completions[i]), rewards[i], 0, i));
    }
    double[] advantages = {3, -1, -1, -1}; // sums to 0 over sequences, not over tokens

    GrpoLoss.Result r = GrpoLoss.compute(lm, batch, advantages, grpoScales(batch), logProbs(lm, batch), null, CONFIG);

    assertThat(r.loss()).isCloseTo(0.0, org.assertj.core.data.Offset.offset(1e-7));
    assertThat(r.measures().tokens()).isEqualTo(11);
    assertThat(r.measures().kl()).isZero();
  }

  @Test
  void compute_noReferenceWithKlBetaZero_equalsTheLossWithTheReferenceAtThePolicy() {
    TinyLm lm = TinyLm.of(ModelWeights.init(SMALL, 1));
    List<Trajectory> batch = offPolicyBatch(lm, new Random(3));
    double[] advantages = new double[batch.size()];
    for (int i = 0; i < advantages.length; i++) {
      advantages[i] = i % 2 == 0 ? 1 : -0.5;
    }
    GrpoConfig noKl = CONFIG.toBuilder().klBeta(0).build();

    double[] scales = grpoScales(batch);
    GrpoLoss.Result without = GrpoLoss.compute(lm, batch, advantages, scales, null, null, noKl);
    GrpoLoss.Result atPolicy = GrpoLoss.compute(lm, batch, advantages, scales, logProbs(lm, batch), null, noKl);

    assertThat(without.measures().kl()).isZero();
    assertThat(without.loss()).isCloseTo(atPolicy.loss(), org.assertj.core.data.Offset.offset(1e-6));
    assertThat(without.gradient()).containsExactly(atPolicy.gradient(), org.assertj.core.data.Offset.offset(1e-6f));
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> GrpoLoss.compute(lm, batch, advantages, scales, null, null,
        CONFIG))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("klBeta is 0.1");
  }

  private static double loss(float[] p, List<Trajectory> batch, double[] advantages, float[][] refLogProbs) {
    TinyLm lm = TinyLm.of(ModelWeights.of(SMALL, 0, p.clone()));
    return GrpoLoss.compute(lm, batch, advantages, grpoScales(batch), refLogProbs, null, CONFIG).loss();
  }

  /** GRPO's normalisers: {@code 1 / (|o_i| B)}. */
  static double[] grpoScales(List<Trajectory> batch) {
    double[] s = new double[batch.size()];
    for (int i = 0; i < s.length; i++) {
      s[i] = 1.0 / (batch.get(i).completionLength() * (double) batch.size());
    }
    return s;
  }

  /** Two groups of four; behaviour log-probs within +-0.1 of the policy's, so ratios stay inside the clip range. */
  private static List<Trajectory> offPolicyBatch(TinyLm lm, Random rng) {
    List<Trajectory> batch = new ArrayList<>();
    for (int[] prompt : new int[][] {{1, 2}, {4}}) {
      for (int g = 0; g < 4; g++) {
        int[] completion = rng.ints(1 + rng.nextInt(3), 0, 6).toArray();
        float[] behaviour = logProbs(lm, prompt, completion);
        for (int t = 0; t < behaviour.length; t++) {
          behaviour[t] = Math.min(0f, behaviour[t] + (float) (rng.nextDouble() * 0.2 - 0.1));
        }
        batch.add(new Trajectory("r", prompt, completion, behaviour, g == 0 ? 1 : rng.nextInt(2), 0, g));
      }
    }
    return batch;
  }

  private static float[] logProbs(TinyLm lm, int[] prompt, int[] completion) {
    return logProbs(lm, prompt, completion, CONFIG.temperature());
  }

  /** Per-token log-probs of {@code completion} after {@code prompt}, as sampling at {@code temperature} records. */
  static float[] logProbs(TinyLm lm, int[] prompt, int[] completion, double temperature) {
    int[] seq = java.util.Arrays.copyOf(prompt, prompt.length + completion.length);
    System.arraycopy(completion, 0, seq, prompt.length, completion.length);
    float[] out = new float[completion.length];
    for (int t = 0; t < out.length; t++) {
      out[t] = Sampling.logProb(lm.logits(seq, prompt.length + t), completion[t], temperature);
    }
    return out;
  }

  private static float[][] logProbs(TinyLm lm, List<Trajectory> batch) {
    float[][] out = new float[batch.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = logProbs(lm, batch.get(i).prompt(), batch.get(i).completion());
    }
    return out;
  }

  private static final LossSettings GRPO = GrpoConfig.builder().klBeta(0.1).build().lossSettings();

  @Test
  void objective_clippedToken_contributesTheClippedTermAndNoGradient() {
    // ratio 2 with advantage 1: the clipped term 1.2 is the smaller; reference = policy, so no KL
    GrpoLoss.Objective o = GrpoLoss.objective(new double[][] {{Math.log(0.5)}}, new double[][] {{Math.log(0.25)}},
        null, new double[][] {{Math.log(0.5)}}, new double[] {1.0}, new double[] {1.0}, GRPO);

    assertThat(o.loss()).isCloseTo(-1.2, org.assertj.core.api.Assertions.within(1e-12));
    assertThat(o.measures().clipFraction()).isEqualTo(1.0);
    assertThat(o.measures().clipHighFraction()).isEqualTo(1.0);
    assertThat(o.measures().meanRatio()).isCloseTo(2.0, org.assertj.core.api.Assertions.within(1e-12));
    assertThat(o.gradient()[0][0]).isEqualTo(0.0);
  }

  @Test
  void objective_onPolicyTokenWithKl_matchesTheHandComputedValues() {
    // ratio 1, advantage -1; reference twice as likely: delta = ln 2, D = 2 - ln 2 - 1
    double lp = Math.log(0.25);
    GrpoLoss.Objective o = GrpoLoss.objective(new double[][] {{lp, lp}}, new double[][] {{lp, lp}}, null,
        new double[][] {{lp + Math.log(2), lp + Math.log(2)}}, new double[] {-1.0}, new double[] {0.5}, GRPO);

    double d = 1 - Math.log(2);
    assertThat(o.loss()).isCloseTo(1 + 0.1 * d, org.assertj.core.api.Assertions.within(1e-12));
    assertThat(o.measures().kl()).isCloseTo(d, org.assertj.core.api.Assertions.within(1e-12));
    assertThat(o.measures().clipFraction()).isZero();
    // dLoss/dlogp = -(r A - beta (1 - e^delta)) / (len * B) = -(-1 + 0.1) / 2
    assertThat(o.gradient()[0]).containsExactly(new double[] {0.45, 0.45}, org.assertj.core.api.Assertions.within(1e-12));
  }

  @Test
  void objective_ragged_isRejectedNamingTheSequence() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> GrpoLoss.objective(new double[][] {{-1}, {-1, -2}},
        new double[][] {{-1}, {-1}}, null, new double[][] {{-1}, {-1, -2}}, new double[] {0, 0}, new double[] {1, 1},
        GRPO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sequence 1");
  }

  private static double[] rewards(List<Trajectory> batch) {
    return batch.stream().mapToDouble(Trajectory::reward).toArray();
  }
}
