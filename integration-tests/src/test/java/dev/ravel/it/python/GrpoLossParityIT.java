package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.workers.grpo.Advantages;
import dev.ravel.workers.grpo.GrpoLoss;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The GRPO maths is the same in both languages: the Java trainer's {@link GrpoLoss#objective} and the Python
 * trainer's loss ({@code python -m ravel_checks.grpo_check}, PyTorch autograd in float64) get the same
 * per-token log-probs, rewards and settings, and agree on the loss, its parts, the advantages and the gradient
 * with respect to every policy log-prob, to 1e-6.
 */
final class GrpoLossParityIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int GROUP = 4;

  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3})
  void objective_javaAndPythonAgreeOnLossAndGradients(long seed) throws Exception {
    SplittableRandom rng = new SplittableRandom(seed);
    int b = 3 * GROUP;
    double[][] policy = new double[b][];
    double[][] behaviour = new double[b][];
    double[][] reference = new double[b][];
    double[] rewards = new double[b];
    for (int i = 0; i < b; i++) {
      int len = 1 + rng.nextInt(5);
      policy[i] = new double[len];
      behaviour[i] = new double[len];
      reference[i] = new double[len];
      for (int t = 0; t < len; t++) {
        policy[i][t] = -0.01 - 3 * rng.nextDouble();
        // ratios from about 0.6 to 1.6, so some tokens are clipped on either side
        behaviour[i][t] = policy[i][t] + 0.5 * (rng.nextDouble() - 0.5) * 2 * 0.45;
        reference[i][t] = policy[i][t] + (rng.nextDouble() - 0.5);
      }
      rewards[i] = rng.nextInt(3) == 0 ? 1.0 : 0.0;
    }
    rewards[0] = 1.0; // the first group has signal whatever the draw
    rewards[1] = 0.0;
    double eps = 0.2;
    double beta = 0.04;
    double advantageEps = 1e-6;

    double[] advantages = Advantages.groupRelative(rewards, GROUP, advantageEps);
    GrpoLoss.Objective java = GrpoLoss.objective(policy, behaviour, reference, advantages, eps, beta);

    Map<String, Object> input = new LinkedHashMap<>();
    input.put("policy_logprobs", policy);
    input.put("behaviour_logprobs", behaviour);
    input.put("reference_logprobs", reference);
    input.put("rewards", rewards);
    input.put("group_size", GROUP);
    input.put("clip_epsilon", eps);
    input.put("kl_beta", beta);
    input.put("advantage_eps", advantageEps);
    JsonNode py = python(JSON.writeValueAsString(input));

    assertThat(java.clipFraction()).as("the inputs exercise clipping").isBetween(0.01, 0.99);
    assertThat(py.get("loss").asDouble()).isCloseTo(java.loss(), within(1e-6));
    assertThat(py.get("kl").asDouble()).isCloseTo(java.kl(), within(1e-6));
    assertThat(py.get("clip_fraction").asDouble()).isCloseTo(java.clipFraction(), within(1e-6));
    assertThat(py.get("mean_ratio").asDouble()).isCloseTo(java.meanRatio(), within(1e-6));
    for (int i = 0; i < b; i++) {
      assertThat(py.get("advantages").get(i).asDouble()).as("advantage %d", i).isCloseTo(advantages[i], within(1e-6));
      JsonNode g = py.get("grad_logprobs").get(i);
      assertThat(g.size()).isEqualTo(policy[i].length);
      for (int t = 0; t < policy[i].length; t++) {
        assertThat(g.get(t).asDouble()).as("gradient [%d][%d]", i, t).isCloseTo(java.gradient()[i][t], within(1e-6));
      }
    }
    double gradNorm = 0;
    for (double[] row : java.gradient()) {
      for (double x : row) {
        gradNorm += x * x;
      }
    }
    assertThat(Math.sqrt(gradNorm)).as("a gradient worth comparing").isGreaterThan(1e-3);
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
      assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("grpo_check finished").isTrue();
      assertThat(p.exitValue()).as("grpo_check exit code; stderr: %s", Files.readString(err)).isZero();
      return JSON.readTree(out.toFile());
    } finally {
      p.destroyForcibly();
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }
}
