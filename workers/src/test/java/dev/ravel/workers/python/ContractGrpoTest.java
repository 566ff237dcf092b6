package dev.ravel.workers.python;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.telemetry.contract.Contract;
import dev.ravel.workers.grpo.GrpoConfig;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The GRPO side of the contract file the Python workers load: the Python engines, the GRPO defaults both
 * trainers share, and the golden loss case both test suites check (the Java {@code GrpoLoss} here, the PyTorch
 * loss in {@code tests/test_contract.py}).
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
  void grpoDefaults_areGrpoConfigsDefaults() {
    JsonNode d = Contract.section("grpo_defaults");
    GrpoConfig g = GrpoConfig.builder().build();
    assertThat(d.get("group_size").asInt()).isEqualTo(g.groupSize());
    assertThat(d.get("clip_epsilon").asDouble()).isEqualTo(g.clipEpsilon());
    assertThat(d.get("kl_beta").asDouble()).isEqualTo(g.klBeta());
    assertThat(d.get("learning_rate").asDouble()).isEqualTo(g.learningRate());
    assertThat(d.get("weight_decay").asDouble()).isEqualTo(g.weightDecay());
    assertThat(d.get("max_grad_norm").asDouble()).isEqualTo(g.maxGradNorm());
    assertThat(d.get("temperature").asDouble()).isEqualTo(g.temperature());
    assertThat(d.get("advantage_eps").asDouble()).isEqualTo(g.advantageEps());
    assertThat(d.size()).as("every shared default is checked above").isEqualTo(8);
  }

  @Test
  void grpoLoss_matchesTheGoldenCase() {
    JsonNode golden = Contract.section("golden").get("grpo_loss");
    JsonNode in = golden.get("input");
    JsonNode want = golden.get("expected");
    double[] rewards = doubles(in.get("rewards"));
    double[] advantages = dev.ravel.workers.grpo.Advantages.groupRelative(rewards, in.get("group_size").asInt(),
        in.get("advantage_eps").asDouble());
    dev.ravel.workers.grpo.GrpoLoss.Objective o = dev.ravel.workers.grpo.GrpoLoss.objective(
        rows(in.get("policy_logprobs")), rows(in.get("behaviour_logprobs")), rows(in.get("reference_logprobs")),
        advantages, in.get("clip_epsilon").asDouble(), in.get("kl_beta").asDouble());

    org.assertj.core.data.Offset<Double> close = org.assertj.core.api.Assertions.within(1e-12);
    assertThat(o.loss()).isCloseTo(want.get("loss").asDouble(), close);
    assertThat(o.kl()).isCloseTo(want.get("kl").asDouble(), close);
    assertThat(o.clipFraction()).isCloseTo(want.get("clip_fraction").asDouble(), close).isPositive();
    assertThat(o.meanRatio()).isCloseTo(want.get("mean_ratio").asDouble(), close);
    assertThat(advantages).containsExactly(doubles(want.get("advantages")), close);
    double[][] grad = rows(want.get("grad_logprobs"));
    assertThat(o.gradient().length).isEqualTo(grad.length);
    for (int i = 0; i < grad.length; i++) {
      assertThat(o.gradient()[i]).as("gradient row %d", i).containsExactly(grad[i], close);
    }
  }

  private static double[] doubles(JsonNode array) {
    double[] out = new double[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = array.get(i).asDouble();
    }
    return out;
  }

  private static double[][] rows(JsonNode array) {
    double[][] out = new double[array.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = doubles(array.get(i));
    }
    return out;
  }
}
