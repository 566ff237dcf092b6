package dev.ravel.workers.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.contract.Contract;
import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.GrpoLoss;
import dev.ravel.workers.grpo.KlEstimator;
import dev.ravel.workers.grpo.LossType;
import dev.ravel.workers.grpo.LrSchedule;
import dev.ravel.workers.grpo.RewardScale;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * The GRPO side of the contract file the Python workers load: the Python engines, the GRPO settings both trainers
 * share (names, defaults, named choices), the trainer's metrics on the wire, and the golden loss cases both test
 * suites check (the Java {@code GrpoLoss} here, the PyTorch loss in {@code tests/test_contract.py}).
 */
final class ContractGrpoTest {
  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.isNull() ? null : n.asText()));
    return out;
  }

  @Test
  void engines_areThePythonWorkersEngines() {
    assertThat(strings(Contract.section("engines"))).containsExactlyElementsOf(PythonWorkers.ENGINES);
  }

  @Test
  void refitWeights_areThePythonWorkersWeightsFormat() {
    assertThat(Contract.section("refit_weights").get("format").asText()).isEqualTo(PythonWorkers.WEIGHTS_FORMAT);
    assertThat(strings(Contract.section("refit_weights").get("keys")))
        .containsExactlyElementsOf(PythonWorkers.WEIGHTS_KEYS);
  }

  @Test
  void grpoDefaults_areGrpoConfigsDefaultsOnTheWire() {
    JsonNode d = Contract.section("grpo_defaults");
    ObjectNode wire = PythonWorkers.grpo(GrpoConfig.builder().build());
    List<String> names = new ArrayList<>();
    wire.fieldNames().forEachRemaining(names::add);
    List<String> contract = new ArrayList<>();
    d.fieldNames().forEachRemaining(contract::add);
    assertThat(names).as("the settings the Python trainer reads").containsExactlyElementsOf(contract);
    for (String name : names) {
      JsonNode want = d.get(name);
      JsonNode got = wire.get(name);
      if (want.isNumber()) {
        assertThat(got.asDouble()).as(name).isEqualTo(want.asDouble());
      } else {
        assertThat(got).as(name).isEqualTo(want);
      }
    }
  }

  @Test
  void grpoChoices_areTheJavaEnumsNames() {
    JsonNode c = Contract.section("grpo_choices");
    assertThat(strings(c.get("loss_type"))).containsExactlyElementsOf(names(LossType.values(), LossType::configName));
    assertThat(strings(c.get("scale_rewards")))
        .containsExactlyElementsOf(names(RewardScale.values(), RewardScale::configName));
    assertThat(strings(c.get("kl_estimator")))
        .containsExactlyElementsOf(names(KlEstimator.values(), KlEstimator::configName));
    assertThat(strings(c.get("lr_scheduler")))
        .containsExactlyElementsOf(names(LrSchedule.values(), LrSchedule::configName));
  }

  @Test
  void rewardOnError_isTheRewardEnvironmentsChoices() {
    assertThat(strings(Contract.section("reward_on_error")))
        .containsExactlyElementsOf(dev.ravel.workers.reward.RewardEnvironment.ON_ERROR);
  }

  @Test
  void trainerStrategies_areThePythonWorkersChoices() {
    assertThat(strings(Contract.section("trainer_strategies"))).containsExactlyElementsOf(PythonWorkers.TRAINER_STRATEGIES);
  }

  @Test
  void trainMetrics_areTrainMetricsComponentsInOrder() {
    assertThat(strings(Contract.section("train_metrics"))).containsExactlyElementsOf(PythonWire.trainMetricsFields());
  }

  @Test
  void grpoLoss_matchesTheGoldenCase() {
    check(Contract.section("golden").get("grpo_loss"));
  }

  @Test
  void grpoLossVariants_matchTheGoldenCases() {
    JsonNode cases = Contract.section("golden").get("grpo_loss_variants");
    assertThat(cases.size()).isGreaterThanOrEqualTo(4);
    cases.forEach(ContractGrpoTest::check);
  }

  private static void check(JsonNode golden) {
    JsonNode in = golden.get("input");
    JsonNode want = golden.get("expected");
    GrpoConfig config = config(in.get("settings"));
    GrpoLoss.Evaluation e = GrpoLoss.evaluate(rows(in.get("policy_logprobs")), rows(in.get("behaviour_logprobs")),
        rows(in.get("old_logprobs")), rows(in.get("reference_logprobs")), doubles(in.get("rewards")),
        config.groupSize(), config.lossSettings(), config.microBatchSize());
    GrpoLoss.Measures m = e.objective().measures();
    Offset<Double> close = within(1e-12);
    String settings = in.get("settings").toString();
    assertThat(e.objective().loss()).as("loss of %s", settings).isCloseTo(want.get("loss").asDouble(), close);
    assertThat(m.kl()).as("kl of %s", settings).isCloseTo(want.get("kl").asDouble(), close);
    assertThat(m.clipFraction()).as("clip of %s", settings).isCloseTo(want.get("clip_fraction").asDouble(), close);
    assertThat(m.meanRatio()).isCloseTo(want.get("mean_ratio").asDouble(), close);
    if (want.has("clip_low")) {
      assertThat(m.clipLowFraction()).isCloseTo(want.get("clip_low").asDouble(), close);
      assertThat(m.clipHighFraction()).isCloseTo(want.get("clip_high").asDouble(), close);
      assertThat(m.clipDualFraction()).isCloseTo(want.get("clip_dual").asDouble(), close);
      assertThat(m.ratioMax()).isCloseTo(want.get("max_ratio").asDouble(), close);
      assertThat(m.truncatedFraction()).isCloseTo(want.get("tis_truncated").asDouble(), close);
      assertThat(e.advantaged().zeroAdvantageGroups()).isEqualTo(want.get("zero_advantage_groups").asInt());
      assertThat(e.scales()).containsExactly(doubles(want.get("scales")), close);
    }
    assertThat(e.advantaged().advantages()).containsExactly(doubles(want.get("advantages")), close);
    double[][] grad = rows(want.get("grad_logprobs"));
    assertThat(e.objective().gradient().length).isEqualTo(grad.length);
    for (int i = 0; i < grad.length; i++) {
      assertThat(e.objective().gradient()[i]).as("gradient row %d of %s", i, settings).containsExactly(grad[i], close);
    }
  }

  /** The {@link GrpoConfig} of a case's settings (the wire names, defaults for the rest). */
  static GrpoConfig config(JsonNode s) {
    ObjectNode d = PythonWorkers.grpo(GrpoConfig.builder().build());
    s.fields().forEachRemaining(f -> d.set(f.getKey(), f.getValue()));
    GrpoConfig.Builder b = GrpoConfig.builder().promptsPerStep(1).groupSize(d.get("group_size").asInt())
        .learningRate(d.get("learning_rate").asDouble()).advantageEps(d.get("advantage_eps").asDouble())
        .klBeta(d.get("kl_beta").asDouble()).lossType(LossType.parse(d.get("loss_type").asText()))
        .scaleRewards(RewardScale.parse(d.get("scale_rewards").asText()))
        .filterZeroAdvantage(d.get("filter_zero_advantage").asBoolean())
        .clipEpsilonLow(d.get("clip_epsilon_low").asDouble()).clipEpsilonHigh(d.get("clip_epsilon_high").asDouble())
        .clipRatioC(d.get("clip_ratio_c").asDouble()).klEstimator(KlEstimator.parse(d.get("kl_estimator").asText()))
        .klInReward(d.get("kl_in_reward").asBoolean()).tisCap(d.get("tis_cap").asDouble())
        .maxNewTokens(d.get("max_new_tokens").asInt());
    int micro = d.get("micro_batch_size").asInt();
    // promptsPerStep only sizes the builder's divisibility check: the case's batch is what its arrays hold
    return b.promptsPerStep(Math.max(1, micro)).microBatchSize(micro).build();
  }

  private static <E> List<String> names(E[] values, Function<E, String> name) {
    return Arrays.stream(values).map(name).toList();
  }

  private static double[] doubles(JsonNode array) {
    double[] out = new double[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = array.get(i).asDouble();
    }
    return out;
  }

  private static double[][] rows(JsonNode array) {
    if (array == null || array.isNull()) {
      return null;
    }
    double[][] out = new double[array.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = doubles(array.get(i));
    }
    return out;
  }
}
