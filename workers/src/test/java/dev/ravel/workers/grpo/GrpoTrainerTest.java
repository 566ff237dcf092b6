package dev.ravel.workers.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.workers.model.Generation;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

final class GrpoTrainerTest {
  private static final int EOS = 13;
  private static final ModelSpec SPEC = ModelSpec.tiny(14);
  private static final GrpoConfig CONFIG = GrpoConfig.builder().groupSize(4).learningRate(0.01).build();
  private static final int[] PROMPT_A = {1, 10, 2, 12};
  private static final int[] PROMPT_B = {3, 10, 3, 12};

  @Test
  void train_onPolicyFirstStepHasUnitRatiosNoClippingAndNoKl() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 1), CONFIG);
    List<Trajectory> batch = sampled(trainer.weights(), new double[] {1, 0, 0, 1, 0, 0, 1, 0});

    TrainMetrics m = trainer.train(batch).metrics();

    assertThat(m.version()).isEqualTo(1);
    assertThat(m.meanRatio()).isCloseTo(1.0, within(1e-6));
    assertThat(m.clipFraction()).isZero();
    assertThat(m.kl()).isCloseTo(0.0, within(1e-9));
    assertThat(m.gradNorm()).isPositive();
    assertThat(m.meanReward()).isEqualTo(3 / 8.0);
    assertThat(m.sequences()).isEqualTo(8);
    assertThat(m.tokens()).isEqualTo(batch.stream().mapToInt(Trajectory::completionLength).sum());
    assertThat(trainer.weights().version()).isEqualTo(1);
  }

  @Test
  void train_makesTheRewardedCompletionMoreLikelyAndTheOthersLessLikely() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 2), CONFIG);
    TinyLm lm = TinyLm.of(trainer.weights());
    List<Trajectory> batch = new ArrayList<>();
    int[][] completions = {{3, EOS}, {4, EOS}, {0, EOS}, {2, EOS}};
    for (int g = 0; g < 4; g++) {
      float[] behaviour = GrpoLossTest.logProbs(lm, PROMPT_A, completions[g], 1.0);
      batch.add(new Trajectory("q", PROMPT_A, completions[g], behaviour, g == 0 ? 1 : 0, 0, g));
    }
    LogProbs before = trainer.logprobs(batch);

    trainer.train(batch);

    LogProbs after = trainer.logprobs(batch);
    assertThat(after.policy(0)[0]).isGreaterThan(before.policy(0)[0]);
    for (int g = 1; g < 4; g++) {
      assertThat(after.policy(g)[0]).as("completion %d", g).isLessThan(before.policy(g)[0]);
    }
  }

  @Test
  void train_staleBehaviourClipsOnlyTheTokensWhoseAdvantageIsPositive() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 3), CONFIG);
    TinyLm lm = TinyLm.of(trainer.weights());
    List<Trajectory> batch = new ArrayList<>();
    int[][] completions = {{3, EOS}, {4, EOS}, {0, EOS}, {2, EOS}};
    for (int g = 0; g < 4; g++) {
      float[] behaviour = GrpoLossTest.logProbs(lm, PROMPT_A, completions[g], 1.0);
      for (int t = 0; t < behaviour.length; t++) {
        behaviour[t] -= 1; // the behaviour policy liked these tokens e times less: ratio = e > 1 + eps
      }
      batch.add(new Trajectory("q", PROMPT_A, completions[g], behaviour, g == 0 ? 1 : 0, 0, g));
    }

    TrainMetrics m = trainer.train(batch).metrics();

    // A > 0 and ratio > 1 + eps: clipped (no gradient); A < 0: min() keeps the unclipped, larger penalty
    assertThat(m.clipFraction()).isEqualTo(2 / 8.0);
    assertThat(m.meanRatio()).isCloseTo(Math.E, within(1e-4));
  }

  @Test
  void train_groupsWithoutRewardVarianceLeaveThePolicyUnchanged() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 4), CONFIG);
    ModelWeights before = trainer.weights();

    TrainStep step = trainer.train(sampled(before, new double[] {1, 1, 1, 1, 0, 0, 0, 0}));

    assertThat(step.metrics().gradNorm()).isZero();
    assertThat(step.weights().params()).containsExactly(before.params());
    assertThat(step.weights().version()).isEqualTo(1);
  }

  @Test
  void logprobs_referenceStaysFrozenWhileThePolicyMoves() {
    ModelWeights initial = ModelWeights.init(SPEC, 5);
    GrpoTrainer trainer = new GrpoTrainer(initial, CONFIG);
    List<Trajectory> batch = sampled(initial, new double[] {1, 0, 0, 0, 0, 1, 0, 0});
    LogProbs start = trainer.logprobs(batch);
    assertThat(start.policy(0)).containsExactly(start.reference(0));
    assertThat(start.policy(0)).containsExactly(batch.get(0).logprobs());

    trainer.train(batch);
    trainer.train(batch);
    LogProbs later = trainer.logprobs(batch);

    assertThat(later.policyVersion()).isEqualTo(2);
    assertThat(later.referenceVersion()).isZero();
    for (int i = 0; i < batch.size(); i++) {
      assertThat(later.reference(i)).containsExactly(start.reference(i));
    }
    assertThat(later.policy(0)).isNotEqualTo(start.policy(0));
    assertThat(later.meanKl()).isPositive();
  }

  @Test
  void train_withPrecomputedReferenceLogProbsMatchesTrainComputingThem() {
    ModelWeights initial = ModelWeights.init(SPEC, 6);
    GrpoTrainer a = new GrpoTrainer(initial, CONFIG);
    GrpoTrainer b = new GrpoTrainer(initial, CONFIG);
    List<Trajectory> first = sampled(initial, new double[] {1, 0, 0, 0, 0, 1, 1, 0});
    a.train(first);
    b.train(first, b.logprobs(first));
    List<Trajectory> second = sampled(a.weights(), new double[] {0, 0, 1, 0, 1, 1, 1, 0});

    TrainStep viaA = a.train(second);
    TrainStep viaB = b.train(second, b.logprobs(second));

    assertThat(viaB.weights().params()).containsExactly(viaA.weights().params());
    assertThat(viaB.metrics()).isEqualTo(viaA.metrics());
    assertThat(viaA.metrics().kl()).isPositive();
  }

  @Test
  void train_handsOutWeightsThatLaterStepsDoNotChange() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 7), CONFIG);
    List<Trajectory> batch = sampled(trainer.weights(), new double[] {1, 0, 0, 0, 0, 1, 0, 0});
    ModelWeights v1 = trainer.train(batch).weights();
    float[] snapshot = v1.params().clone();

    ModelWeights v2 = trainer.train(batch).weights();

    assertThat(v1.params()).containsExactly(snapshot);
    assertThat(v2.params()).isNotEqualTo(snapshot);
    assertThat(v2.version()).isEqualTo(2);
  }

  @Test
  void train_batchThatIsNotWholeGroupsIsRejected() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 8), CONFIG);
    List<Trajectory> batch = sampled(trainer.weights(), new double[] {1, 0, 0, 0, 0, 1, 0, 0}).subList(0, 6);

    assertThatThrownBy(() -> trainer.train(batch))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("batch")
        .hasMessageContaining("groupSize 4");
  }

  @Test
  void train_groupMixingPromptsIsRejected() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 8), CONFIG);
    List<Trajectory> batch = new ArrayList<>(sampled(trainer.weights(), new double[] {1, 0, 0, 0, 0, 1, 0, 0}));
    Trajectory moved = batch.remove(4); // the first of prompt B's group into prompt A's
    batch.add(3, moved);

    assertThatThrownBy(() -> trainer.train(batch))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("trajectory 3");
    assertThat(trainer.steps()).isZero();
  }

  @Test
  void train_precomputedForAnotherBatchIsRejected() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 9), CONFIG);
    List<Trajectory> batch = sampled(trainer.weights(), new double[] {1, 0, 0, 0, 0, 1, 0, 0});
    LogProbs half = trainer.logprobs(batch.subList(0, 4));

    assertThatThrownBy(() -> trainer.train(batch, half)).hasMessageStartingWith("precomputed");
  }

  /** Two groups of four completions sampled from {@code w}, for prompts A and B, with the given rewards. */
  @Test
  void restore_fromAStateWrittenToDisk_continuesBitForBitAsTheUninterruptedTrainer(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) {
    double[][] rewards = {{1, 0, 0, 1, 0, 0, 1, 0}, {0, 1, 1, 0, 1, 0, 0, 0}, {1, 1, 0, 0, 0, 1, 0, 1},
        {0, 0, 1, 0, 1, 1, 0, 1}};
    GrpoTrainer straight = new GrpoTrainer(ModelWeights.init(SPEC, 3), CONFIG);
    for (double[] r : rewards) {
      straight.train(sampled(straight.weights(), r));
    }
    GrpoTrainer first = new GrpoTrainer(ModelWeights.init(SPEC, 3), CONFIG);
    first.train(sampled(first.weights(), rewards[0]));
    first.train(sampled(first.weights(), rewards[1]));
    TrainerState saved = dev.ravel.workers.trainer.TrainerStateFile.read(
        dev.ravel.workers.trainer.TrainerStateFile.write(dir, first.state()));

    GrpoTrainer resumed = new GrpoTrainer(ModelWeights.init(SPEC, 3), CONFIG); // the same seeded reference
    resumed.restore(saved);
    assertThat(resumed.weights().version()).isEqualTo(2);
    resumed.train(sampled(resumed.weights(), rewards[2]));
    resumed.train(sampled(resumed.weights(), rewards[3]));

    assertThat(resumed.weights().version()).isEqualTo(straight.weights().version());
    assertThat(resumed.weights().params()).containsExactly(straight.weights().params());
    assertThat(resumed.weights().sha256()).isEqualTo(straight.weights().sha256());
    // without the optimizer's moments the same weights continue differently
    GrpoTrainer weightsOnly = new GrpoTrainer(ModelWeights.init(SPEC, 3), CONFIG);
    weightsOnly.restore(new TrainerState(saved.weights(),
        new dev.ravel.workers.model.AdamW.State(new float[saved.optimizer().m().length],
            new float[saved.optimizer().v().length], 0)));
    weightsOnly.train(sampled(weightsOnly.weights(), rewards[2]));
    weightsOnly.train(sampled(weightsOnly.weights(), rewards[3]));
    assertThat(weightsOnly.weights().sha256()).isNotEqualTo(straight.weights().sha256());
  }

  @Test
  void restore_stateOfAnotherModel_isRejectedNamingTheSpec() {
    GrpoTrainer t = new GrpoTrainer(ModelWeights.init(SPEC, 3), CONFIG);
    GrpoTrainer other = new GrpoTrainer(ModelWeights.init(ModelSpec.tiny(20), 3), CONFIG);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> t.restore(other.state()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("state: spec");
  }

  @Test
  void train_fourMicroBatchesTakeTheStepOfOne() {
    double[] rewards = {1, 0, 0, 1, 0, 1, 1, 1};
    for (LossType type : new LossType[] {LossType.GRPO, LossType.DR_GRPO, LossType.DAPO}) {
      GrpoConfig whole = CONFIG.toBuilder().promptsPerStep(2).lossType(type).build();
      GrpoTrainer a = new GrpoTrainer(ModelWeights.init(SPEC, 6), whole);
      GrpoTrainer b = new GrpoTrainer(ModelWeights.init(SPEC, 6), whole.toBuilder().microBatchSize(2).build());
      List<Trajectory> batch = sampled(a.weights(), rewards);

      TrainMetrics ma = a.train(batch).metrics();
      TrainMetrics mb = b.train(batch).metrics();

      assertThat(mb.loss()).as("%s loss", type).isCloseTo(ma.loss(), within(1e-6));
      assertThat(mb.gradNorm()).as("%s gradient norm", type).isCloseTo(ma.gradNorm(), within(1e-6));
      // the same gradient to float rounding: Adam's first step moves each weight by about lr * sign(g), so the
      // weights agree wherever the gradient is not within rounding of zero
      float[] pa = a.weights().params();
      float[] pb = b.weights().params();
      int differ = 0;
      for (int k = 0; k < pa.length; k++) {
        differ += Math.abs(pa[k] - pb[k]) > 1e-6 ? 1 : 0;
      }
      assertThat(differ).as("%s: weights that differ by more than 1e-6, of %d", type, pa.length)
          .isLessThanOrEqualTo(pa.length / 100);
    }
  }

  @Test
  void train_microBatchGradientsAddUpToTheFullBatchGradient() {
    GrpoConfig c = CONFIG.toBuilder().promptsPerStep(2).lossType(LossType.DAPO).build();
    ModelWeights w = ModelWeights.init(SPEC, 6);
    List<Trajectory> batch = sampled(w, new double[] {1, 0, 0, 1, 0, 1, 1, 1});
    double[] adv = Advantages.groupRelative(batch.stream().mapToDouble(Trajectory::reward).toArray(), 4, 1e-6);
    int[] lengths = batch.stream().mapToInt(Trajectory::completionLength).toArray();
    boolean[] kept = {true, true, true, true, true, true, true, true};
    double[] scales = GrpoLoss.scales(lengths, kept, c.lossSettings(), 2);
    float[] full = GrpoLoss.compute(TinyLm.of(w), batch, adv, scales, null, null, c.toBuilder().klBeta(0).build())
        .gradient();
    float[] sum = new float[full.length];
    for (int from = 0; from < 8; from += 2) {
      float[] g = GrpoLoss.compute(TinyLm.of(w), batch.subList(from, from + 2),
          java.util.Arrays.copyOfRange(adv, from, from + 2), java.util.Arrays.copyOfRange(scales, from, from + 2),
          null, null, c.toBuilder().klBeta(0).build()).gradient();
      for (int k = 0; k < sum.length; k++) {
        sum[k] += g[k];
      }
    }
    assertThat(sum).containsExactly(full, org.assertj.core.data.Offset.offset(1e-6f));
    assertThat(dev.ravel.workers.model.AdamW.globalNorm(full)).isGreaterThan(1e-3);
  }

  @Test
  void train_twoPpoEpochsTakeTwoStepsAndTheSecondPassSeesRatiosAwayFromOne() {
    GrpoConfig one = CONFIG.toBuilder().promptsPerStep(2).learningRate(0.05).build();
    GrpoTrainer a = new GrpoTrainer(ModelWeights.init(SPEC, 7), one);
    GrpoTrainer b = new GrpoTrainer(ModelWeights.init(SPEC, 7), one.toBuilder().ppoEpochs(2).build());
    List<Trajectory> batch = sampled(a.weights(), new double[] {1, 0, 0, 1, 0, 1, 1, 1});

    TrainMetrics ma = a.train(batch).metrics();
    TrainMetrics mb = b.train(batch).metrics();

    assertThat(ma.epochs()).isEqualTo(1);
    assertThat(mb.epochs()).isEqualTo(2);
    assertThat(b.steps()).isEqualTo(2);
    assertThat(b.weights().version()).isEqualTo(1);
    assertThat(ma.maxRatio()).isCloseTo(1.0, within(1e-4)); // on-policy: the one pass's ratios are 1
    assertThat(Math.abs(mb.maxRatio() - 1)).isGreaterThan(1e-3);
  }

  @Test
  void train_filterZeroAdvantageWithOnlyFlatGroupsTakesNoStep() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 8),
        CONFIG.toBuilder().promptsPerStep(2).filterZeroAdvantage(true).build());
    ModelWeights before = trainer.weights();

    TrainStep step = trainer.train(sampled(before, new double[] {1, 1, 1, 1, 0, 0, 0, 0}));

    assertThat(step.metrics().zeroAdvantageGroups()).isEqualTo(2);
    assertThat(step.metrics().keptSequences()).isZero();
    assertThat(step.metrics().epochs()).isZero();
    assertThat(trainer.steps()).isZero();
    assertThat(step.weights().params()).containsExactly(before.params());
    assertThat(step.weights().version()).isEqualTo(1);
  }

  @Test
  void train_learningRateFollowsTheScheduleAndResumesWithIt() {
    GrpoConfig c = CONFIG.toBuilder().promptsPerStep(2).learningRate(0.01).lrSchedule(LrSchedule.LINEAR)
        .warmupSteps(2).totalSteps(4).build();
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 9), c);
    double[] rates = new double[4];
    for (int s = 0; s < 4; s++) {
      rates[s] = trainer.train(sampled(trainer.weights(), new double[] {1, 0, 0, 1, 0, 1, 1, 1})).metrics()
          .learningRate();
      if (s == 1) { // a resumed trainer continues the schedule where the state left it
        GrpoTrainer resumed = new GrpoTrainer(ModelWeights.init(SPEC, 9), c);
        resumed.restore(trainer.state());
        assertThat(c.learningRateAt(resumed.steps())).isEqualTo(0.01);
      }
    }
    // k / W while warming up (k = 0, 1), then (T - k) / (T - W) for k = 2, 3
    assertThat(rates).containsExactly(new double[] {0.0, 0.005, 0.01, 0.005}, within(1e-12));
  }

  @Test
  void train_truncatedImportanceSamplingTakesTheRatioAgainstTheStepsStart() {
    GrpoTrainer trainer = new GrpoTrainer(ModelWeights.init(SPEC, 10),
        CONFIG.toBuilder().promptsPerStep(2).tisCap(1.5).build());
    List<Trajectory> stale = new ArrayList<>();
    for (Trajectory t : sampled(trainer.weights(), new double[] {1, 0, 0, 1, 0, 1, 1, 1})) {
      float[] lp = t.logprobs();
      for (int i = 0; i < lp.length; i++) {
        lp[i] -= 1; // the behaviour policy liked these tokens e times less: pi_old / pi_behaviour = e > 1.5
      }
      stale.add(new Trajectory(t.requestId(), t.prompt(), t.completion(), lp, t.reward(), 0, t.groupIndex()));
    }

    TrainMetrics m = trainer.train(stale).metrics();

    assertThat(m.tisTruncated()).isEqualTo(1.0); // every weight e is cut to 1.5
    assertThat(m.meanRatio()).isCloseTo(1.0, within(1e-4)); // the ratio is to the step's start, not the behaviour
    assertThat(m.clipFraction()).isZero();
  }

  private static List<Trajectory> sampled(ModelWeights w, double[] rewards) {
    TinyLm lm = TinyLm.of(w);
    SplittableRandom rng = new SplittableRandom(w.version() * 31 + 1);
    List<Trajectory> batch = new ArrayList<>();
    for (int i = 0; i < rewards.length; i++) {
      int[] prompt = i < 4 ? PROMPT_A : PROMPT_B;
      Generation.Completion c = Generation.sample(lm, prompt, EOS, 3, 1.0, 1.0, rng);
      batch.add(new Trajectory("q" + i / 4, prompt, c.tokens(), c.logprobs(), rewards[i], w.version(), i % 4));
    }
    return batch;
  }
}
