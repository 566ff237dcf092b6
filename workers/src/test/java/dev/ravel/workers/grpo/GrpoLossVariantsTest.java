package dev.ravel.workers.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Each GRPO variant against values computed by hand (the formula written out beside each), the same cases as
 * {@code tests/test_grpo.py} on the Python side.
 */
final class GrpoLossVariantsTest {
  private static LossSettings settings(GrpoConfig.Builder b) {
    return b.build().lossSettings();
  }

  private static GrpoConfig.Builder base() {
    return GrpoConfig.builder().groupSize(2).promptsPerStep(2).klBeta(0).maxNewTokens(16);
  }

  @ParameterizedTest
  @CsvSource({
      // lengths 2, 1, 3, 2 (T = 8, B = 4)
      "GRPO, 0, 0.125, 0.25, 0.0833333333333333, 0.125", // 1 / (|o_i| B)
      "DAPO, 0, 0.125, 0.125, 0.125, 0.125", // 1 / T
      "DAPO, 2, 0.125, 0.125, 0.125, 0.125", // the whole batch's tokens whatever the micro-batching
      "BNPO, 0, 0.125, 0.125, 0.125, 0.125", // one micro-batch: as DAPO
      "BNPO, 2, 0.1666666666666667, 0.1666666666666667, 0.1, 0.1", // 1 / (T_mb M): (3 x 2), (5 x 2)
      "DR_GRPO, 0, 0.015625, 0.015625, 0.015625, 0.015625", // 1 / (B max_new_tokens) = 1 / 64
  })
  void scales_byLossType(LossType type, int micro, double s0, double s1, double s2, double s3) {
    double[] s = GrpoLoss.scales(new int[] {2, 1, 3, 2}, new boolean[] {true, true, true, true},
        settings(base().lossType(type)), micro);
    assertThat(s).containsExactly(new double[] {s0, s1, s2, s3}, within(1e-15));
  }

  @Test
  void advantages_batchAndNoneScales() {
    double[] rewards = {1, 0, 3, 1}; // groups (1, 0), (3, 1): means 0.5 and 2
    // batch: population std of all four: mean 1.25, var (0.0625 + 1.5625 + 3.0625 + 0.0625) / 4 = 1.1875
    double d = Math.sqrt(1.1875) + 1e-6;
    assertThat(Advantages.of(rewards, 2, RewardScale.BATCH, 1e-6))
        .containsExactly(new double[] {0.5 / d, -0.5 / d, 1 / d, -1 / d}, within(1e-15));
    assertThat(Advantages.of(rewards, 2, RewardScale.NONE, 1e-6)).containsExactly(0.5, -0.5, 1.0, -1.0);
  }

  @Test
  void advantages_filterZeroAdvantageDropsFlatGroupsFromTheNormaliser() {
    LossSettings s = settings(base().filterZeroAdvantage(true));
    GrpoLoss.Advantaged a = GrpoLoss.advantages(new double[] {1, 0, 1, 1}, 2, null, null, s);
    assertThat(a.zeroAdvantageGroups()).isEqualTo(1);
    assertThat(a.kept()).containsExactly(true, true, false, false);
    // grpo: 1 / (|o_i| B) with B the kept sequences (2)
    assertThat(GrpoLoss.scales(new int[] {2, 1, 3, 3}, a.kept(), s, 0)).containsExactly(0.25, 0.5, 0.0, 0.0);
  }

  @Test
  void objective_clipHigherKeepsTheGradientOfARatioBetweenTheBounds() {
    // r = 1.25, A = 1: eps 0.2 clips it (1.2 < 1.25, no gradient); eps_high 0.28 does not (objective r A)
    double[][] logp = {{Math.log(1.25 * 0.2)}};
    double[][] beh = {{Math.log(0.2)}};
    GrpoLoss.Objective sym = GrpoLoss.objective(logp, beh, null, null, new double[] {1}, new double[] {1},
        settings(base()));
    GrpoLoss.Objective higher = GrpoLoss.objective(logp, beh, null, null, new double[] {1}, new double[] {1},
        settings(base().clipEpsilonLow(0.2).clipEpsilonHigh(0.28)));
    assertThat(sym.loss()).isCloseTo(-1.2, within(1e-12));
    assertThat(sym.gradient()[0][0]).isZero();
    assertThat(sym.measures().clipHighFraction()).isEqualTo(1.0);
    assertThat(higher.loss()).isCloseTo(-1.25, within(1e-12));
    assertThat(higher.gradient()[0][0]).isCloseTo(-1.25, within(1e-12)); // -r A
    assertThat(higher.measures().clipFraction()).isZero();
  }

  @Test
  void objective_dualClipBoundsANegativeAdvantage() {
    // r = 3, A = -1, c = 2: min(r A, clip(r) A) = min(-3, -1.2) = -3; max(-3, c A = -2) = -2, no gradient
    GrpoLoss.Objective o = GrpoLoss.objective(new double[][] {{Math.log(0.3)}}, new double[][] {{Math.log(0.1)}},
        null, null, new double[] {-1}, new double[] {1}, settings(base().clipRatioC(2)));
    assertThat(o.loss()).isCloseTo(2.0, within(1e-12));
    assertThat(o.gradient()[0][0]).isZero();
    assertThat(o.measures().clipDualFraction()).isEqualTo(1.0);
    assertThat(o.measures().clipLowFraction()).isZero();
  }

  @ParameterizedTest
  @CsvSource({
      // delta = ref - logp = ln 2: k1 = -delta (d/dlogp 1), k2 = delta^2 / 2 (-delta), k3 = e^delta - delta - 1
      // (1 - e^delta), low_var_kl = k3 inside its clamps
      "K1, -0.6931471805599453, 1.0",
      "K2, 0.2402265069591007, -0.6931471805599453",
      "K3, 0.3068528194400547, -1.0",
      "LOW_VAR_KL, 0.3068528194400547, -1.0",
  })
  void klEstimators_byHand(KlEstimator k, double value, double derivative) {
    assertThat(k.value(Math.log(0.25), Math.log(0.5))).isCloseTo(value, within(1e-15));
    assertThat(k.derivative(Math.log(0.25), Math.log(0.5))).isCloseTo(derivative, within(1e-15));
  }

  @Test
  void lowVarKl_isClampedToTenWithoutGradient() {
    // delta = 19.9: k3 = e^19.9 - 20.9, far above 10
    assertThat(KlEstimator.LOW_VAR_KL.value(-20, -0.1)).isEqualTo(10.0);
    assertThat(KlEstimator.LOW_VAR_KL.derivative(-20, -0.1)).isZero();
  }

  @Test
  void advantages_klInRewardTakesThePenaltyFromTheRewards() {
    // k3 of behaviour vs reference per token, summed over the completion, times beta, off the reward
    double[][] beh = {{-1.0, -2.0}, {-0.5}};
    double[][] ref = {{-1.5, -2.0}, {-0.1}};
    double k0 = Math.exp(-0.5) + 0.5 - 1;
    double k1 = Math.exp(0.4) - 0.4 - 1;
    GrpoLoss.Advantaged a = GrpoLoss.advantages(new double[] {1, 0}, 2, beh, ref,
        settings(base().klBeta(0.5).klInReward(true).scaleRewards(RewardScale.NONE)));
    double r0 = 1 - 0.5 * k0;
    double r1 = -0.5 * k1;
    assertThat(a.rewards()).containsExactly(new double[] {r0, r1}, within(1e-15));
    assertThat(a.advantages()).containsExactly(new double[] {(r0 - r1) / 2, (r1 - r0) / 2}, within(1e-15));
  }

  @Test
  void objective_klInRewardLeavesTheKlTermOutOfTheLoss() {
    GrpoLoss.Objective o = GrpoLoss.objective(new double[][] {{-1}}, new double[][] {{-1}}, null,
        new double[][] {{-3}}, new double[] {0}, new double[] {1}, settings(base().klBeta(1).klInReward(true)));
    assertThat(o.loss()).isZero();
    assertThat(o.gradient()[0][0]).isZero();
    assertThat(o.measures().kl()).isPositive(); // measured, not penalised
  }

  @Test
  void objective_truncatedImportanceSamplingWeightsByTheCappedRatio() {
    // old / behaviour = e^0.5 = 1.65 > cap 1.2: weight 1.2 (truncated); ratio to old = 1; A = 1: objective 1.2
    LossSettings s = settings(base().tisCap(1.2));
    GrpoLoss.Objective o = GrpoLoss.objective(new double[][] {{-1}}, new double[][] {{-1.5}}, new double[][] {{-1}},
        null, new double[] {1}, new double[] {1}, s);
    assertThat(o.loss()).isCloseTo(-1.2, within(1e-12));
    assertThat(o.gradient()[0][0]).isCloseTo(-1.2, within(1e-12)); // -w r A
    assertThat(o.measures().truncatedFraction()).isEqualTo(1.0);
    assertThat(o.measures().meanRatio()).isEqualTo(1.0);
    assertThatThrownBy(() -> GrpoLoss.objective(new double[][] {{-1}}, new double[][] {{-1.5}}, null, null,
        new double[] {1}, new double[] {1}, s)).hasMessageContaining("old log-probs");
  }

  @ParameterizedTest
  @CsvSource({
      // warmup 2 of 6 steps: k / W while k < W, then the schedule over the remaining 4
      "CONSTANT, 0, 0.5, 1, 1, 1, 1",
      "LINEAR, 0, 0.5, 1, 0.75, 0.5, 0.25",
      "COSINE, 0, 0.5, 1, 0.8535533905932737, 0.5, 0.1464466094067262",
  })
  void lrSchedule_byHand(LrSchedule schedule, double f0, double f1, double f2, double f3, double f4, double f5) {
    double[] got = new double[6];
    for (int k = 0; k < 6; k++) {
      got[k] = schedule.factor(k, 2, 6);
    }
    assertThat(got).containsExactly(new double[] {f0, f1, f2, f3, f4, f5}, within(1e-15));
  }

  @Test
  void parse_unknownNameListsTheValidOnes() {
    assertThatThrownBy(() -> LossType.parse("ppo")).hasMessageContaining("'ppo'")
        .hasMessageContaining("grpo, bnpo, dr_grpo, dapo");
  }
}
