package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.GrpoLoss;
import dev.ravel.workers.grpo.KlEstimator;
import dev.ravel.workers.grpo.LossType;
import dev.ravel.workers.grpo.RewardScale;
import dev.ravel.workers.python.PythonWorkers;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The GRPO maths is the same in both languages, for every setting: the Java trainer's {@link GrpoLoss} and the
 * Python trainer's loss ({@code python -m ravel_checks.grpo_check}, PyTorch autograd in float64) get the same
 * per-token log-probs, rewards and settings, and agree on the loss, its measures, the advantages, the normalisers
 * and the gradient with respect to every policy log-prob, to 1e-6. Every {@code loss_type} x {@code scale_rewards}
 * x {@code kl_estimator} is a case; across them the cases also turn on clip-higher, the dual clip, truncated
 * importance sampling, the KL in the reward, micro-batches and the filtering of flat groups. One Python process
 * checks them all.
 */
final class GrpoLossParityIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int GROUP = 4;

  /** One case: its settings and its inputs. */
  private record Case(GrpoConfig config, double[][] policy, double[][] behaviour, double[][] old,
      double[][] reference, double[] rewards) {}

  @Test
  void evaluate_javaAndPythonAgreeForEveryLossTypeRewardScaleAndKlEstimator() throws Exception {
    List<Case> cases = new ArrayList<>();
    int index = 0;
    for (LossType type : LossType.values()) {
      for (RewardScale scale : RewardScale.values()) {
        for (KlEstimator kl : KlEstimator.values()) {
          cases.add(newCase(index++, type, scale, kl));
        }
      }
    }
    List<Map<String, Object>> inputs = new ArrayList<>();
    for (Case c : cases) {
      Map<String, Object> in = new LinkedHashMap<>();
      in.put("policy_logprobs", c.policy());
      in.put("behaviour_logprobs", c.behaviour());
      if (c.old() != null) {
        in.put("old_logprobs", c.old());
      }
      in.put("reference_logprobs", c.reference());
      in.put("rewards", c.rewards());
      in.put("settings", PythonWorkers.grpo(c.config()));
      inputs.add(in);
    }
    JsonNode out = python(JSON.writeValueAsString(Map.of("cases", inputs)));
    assertThat(out.size()).isEqualTo(cases.size()).isEqualTo(48);

    int clipped = 0;
    int dual = 0;
    int truncated = 0;
    int filtered = 0;
    for (int k = 0; k < cases.size(); k++) {
      Case c = cases.get(k);
      JsonNode py = out.get(k);
      GrpoLoss.Evaluation java = GrpoLoss.evaluate(c.policy(), c.behaviour(), c.old(), c.reference(), c.rewards(),
          GROUP, c.config().lossSettings(), c.config().microBatchSize());
      GrpoLoss.Measures m = java.objective().measures();
      String what = "case " + k + " " + PythonWorkers.grpo(c.config());
      assertThat(py.get("loss").asDouble()).as("loss, %s", what).isCloseTo(java.objective().loss(), within(1e-6));
      assertThat(py.get("kl").asDouble()).as("kl, %s", what).isCloseTo(m.kl(), within(1e-6));
      assertThat(py.get("clip_low").asDouble()).as("clip low, %s", what).isCloseTo(m.clipLowFraction(), within(1e-9));
      assertThat(py.get("clip_high").asDouble()).as("clip high, %s", what)
          .isCloseTo(m.clipHighFraction(), within(1e-9));
      assertThat(py.get("clip_dual").asDouble()).as("dual, %s", what).isCloseTo(m.clipDualFraction(), within(1e-9));
      assertThat(py.get("mean_ratio").asDouble()).as("ratio, %s", what).isCloseTo(m.meanRatio(), within(1e-6));
      assertThat(py.get("max_ratio").asDouble()).as("max ratio, %s", what).isCloseTo(m.ratioMax(), within(1e-6));
      assertThat(py.get("tis_truncated").asDouble()).as("tis, %s", what)
          .isCloseTo(m.truncatedFraction(), within(1e-9));
      assertThat(py.get("zero_advantage_groups").asInt()).as(what)
          .isEqualTo(java.advantaged().zeroAdvantageGroups());
      for (int i = 0; i < c.policy().length; i++) {
        assertThat(py.get("advantages").get(i).asDouble()).as("advantage %d, %s", i, what)
            .isCloseTo(java.advantaged().advantages()[i], within(1e-6));
        assertThat(py.get("scales").get(i).asDouble()).as("scale %d, %s", i, what)
            .isCloseTo(java.scales()[i], within(1e-12));
        JsonNode g = py.get("grad_logprobs").get(i);
        assertThat(g.size()).isEqualTo(c.policy()[i].length);
        for (int t = 0; t < c.policy()[i].length; t++) {
          assertThat(g.get(t).asDouble()).as("gradient [%d][%d], %s", i, t, what)
              .isCloseTo(java.objective().gradient()[i][t], within(1e-6));
        }
      }
      clipped += m.clippedLow() + m.clippedHigh() > 0 ? 1 : 0;
      dual += m.clippedDual() > 0 ? 1 : 0;
      truncated += m.truncated() > 0 ? 1 : 0;
      filtered += java.advantaged().keptCount() < c.policy().length ? 1 : 0;
      assertThat(norm(java.objective().gradient())).as("a gradient worth comparing, %s", what).isGreaterThan(1e-4);
    }
    assertThat(clipped).as("cases that clip").isGreaterThan(24);
    assertThat(dual).as("cases with the dual clip at work").isPositive();
    assertThat(truncated).as("cases with TIS weights truncated").isPositive();
    assertThat(filtered).as("cases with a flat group left out").isPositive();
  }

  /** A batch of 3 groups of 4 drawn from {@code index}, with settings turned on by the index. */
  private static Case newCase(int index, LossType type, RewardScale scale, KlEstimator kl) {
    SplittableRandom rng = new SplittableRandom(1000 + index);
    int b = 3 * GROUP;
    double[][] policy = new double[b][];
    double[][] behaviour = new double[b][];
    double[][] old = new double[b][];
    double[][] reference = new double[b][];
    double[] rewards = new double[b];
    for (int i = 0; i < b; i++) {
      int len = 1 + rng.nextInt(5);
      policy[i] = new double[len];
      behaviour[i] = new double[len];
      old[i] = new double[len];
      reference[i] = new double[len];
      for (int t = 0; t < len; t++) {
        policy[i][t] = -0.01 - 3 * rng.nextDouble();
        // ratios from about 0.6 to 1.6, so some tokens are clipped on either side
        behaviour[i][t] = policy[i][t] + (rng.nextDouble() - 0.5) * 0.9;
        old[i][t] = policy[i][t] + (rng.nextDouble() - 0.5) * 0.2;
        reference[i][t] = policy[i][t] + (rng.nextDouble() - 0.5);
      }
      rewards[i] = rng.nextInt(3) == 0 ? 1.0 : 0.0;
    }
    rewards[0] = 1.0; // the first group has signal whatever the draw
    rewards[1] = 0.0;
    boolean filter = index % 3 == 1;
    if (filter) { // the last group is flat
      for (int i = 2 * GROUP; i < b; i++) {
        rewards[i] = 0.5;
      }
    }
    boolean tis = index % 4 == 1;
    GrpoConfig config = GrpoConfig.builder().groupSize(GROUP).promptsPerStep(3).lossType(type).scaleRewards(scale)
        .klEstimator(kl).klBeta(0.04).maxNewTokens(5)
        .clipEpsilonLow(0.2).clipEpsilonHigh(index % 2 == 1 ? 0.28 : 0.2)
        .clipRatioC(index % 3 == 0 ? 1.3 : 0)
        .tisCap(tis ? 1.05 : 0)
        .klInReward(index % 5 == 2)
        .microBatchSize(index % 2 == 0 ? GROUP : 0)
        .filterZeroAdvantage(filter)
        .build();
    return new Case(config, policy, behaviour, tis ? old : null, reference, rewards);
  }

  private static double norm(double[][] g) {
    double s = 0;
    for (double[] row : g) {
      for (double x : row) {
        s += x * x;
      }
    }
    return Math.sqrt(s);
  }

  /** Runs the Python loss on {@code input} with the Ray virtualenv's interpreter. */
  private static JsonNode python(String input) throws IOException, InterruptedException {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    Path venv = Path.of(System.getenv("RAVEL_RAY_VENV"));
    ProcessBuilder pb = new ProcessBuilder(venv.resolve("bin/python").toString(), "-m", "ravel_checks.grpo_check")
        .directory(home.resolve("workers/src/main/python").toFile());
    Path out = Files.createTempFile("grpo-check", ".json");
    Path err = Files.createTempFile("grpo-check", ".err");
    pb.redirectOutput(out.toFile()).redirectError(err.toFile());
    Process p = pb.start();
    p.getOutputStream().write(input.getBytes(StandardCharsets.UTF_8));
    p.getOutputStream().close();
    try {
      assertThat(p.waitFor(300, TimeUnit.SECONDS)).as("grpo_check finished").isTrue();
      assertThat(p.exitValue()).as("grpo_check exit code; stderr: %s", Files.readString(err)).isZero();
      return JSON.readTree(out.toFile());
    } finally {
      p.destroyForcibly();
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }
}
