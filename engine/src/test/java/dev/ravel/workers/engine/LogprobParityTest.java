package dev.ravel.workers.engine;

import static dev.ravel.workers.engine.Requests.config;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.workers.model.Sampling;
import io.opentelemetry.api.OpenTelemetry;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The engine's behaviour log-probs and the trainer's log-probs ({@link Sampling#logProb}, what the GRPO
 * trainer and loss compute) must be the same number for the same logits, or the importance ratio is skewed
 * from the first step. Both are temperature-scaled, temperature 0 counting as 1; compared bit for bit.
 */
@Timeout(120) // a hang guard only: nothing here asserts a duration
final class LogprobParityTest {
  private static final double[] TEMPERATURES = {0.0, 0.3, 0.7, 1.0, 1.5, 4.0};

  @Test
  void generate_behaviourLogprobOfEachSampledToken_equalsTheTrainersLogProbExactly() {
    FakeModel model = FakeModel.of(5).eosLogit(FakeModel.NEVER);
    int[] prompt = Requests.prompt(6, 3);
    try (EmbeddedEngine engine = new EmbeddedEngine(config().build(), model, OpenTelemetry.noop())) {
      for (double temperature : TEMPERATURES) {
        for (double topP : new double[] {1.0, 0.8}) {
          SamplingParams params = SamplingParams.builder().maxTokens(8).temperature(temperature).topP(topP)
              .seed(11).build();
          GenerationResult r = engine.submit(GenerationRequest.of("p", prompt, params, null)).join();

          int[] completion = r.completionTokens();
          assertThat(completion).hasSize(8);
          float[] logits = new float[FakeModel.VOCAB];
          for (int i = 0; i < completion.length; i++) {
            int last = i == 0 ? prompt[prompt.length - 1] : completion[i - 1];
            model.logitsAfter(last, prompt.length + i, logits);
            assertThat(r.logprobs()[i]).as("T=%s top-p=%s token %d", temperature, topP, i)
                .isEqualTo(Sampling.logProb(logits, completion[i], temperature));
          }
        }
      }
    }
  }

  @Test
  void logprob_randomLogitsEveryTokenAndTemperature_equalsSamplingLogProbExactly() {
    SplittableRandom rng = new SplittableRandom(7);
    for (int trial = 0; trial < 2_000; trial++) {
      float[] logits = new float[1 + rng.nextInt(40)];
      double scale = Math.pow(10, rng.nextInt(7) - 3);
      for (int v = 0; v < logits.length; v++) {
        logits[v] = rng.nextInt(10) == 0 ? Float.NEGATIVE_INFINITY : (float) (rng.nextGaussian() * scale);
      }
      logits[rng.nextInt(logits.length)] = (float) (rng.nextGaussian() * scale);
      for (double temperature : TEMPERATURES) {
        for (int token = 0; token < logits.length; token++) {
          assertThat(TokenSampler.logprob(logits, token, temperature))
              .isEqualTo(Sampling.logProb(logits, token, temperature));
        }
      }
    }
  }

  @Test
  void logprob_positiveInfinityLogit_isZeroForItWhileTheTrainerRejectsSuchLogits() {
    float[] logits = {1f, Float.POSITIVE_INFINITY, 3f};

    assertThat(TokenSampler.logprob(logits, 1, 0.7)).isEqualTo(0f);
    assertThat(TokenSampler.logprob(logits, 2, 0.7)).isEqualTo(Float.NEGATIVE_INFINITY);
    assertThat(new TokenSampler().sample(logits, 0.7, 1.0, 0.5)).isEqualTo(1);
    assertThatThrownBy(() -> Sampling.logProb(logits, 1, 0.7)).hasMessageStartingWith("logits[1]");
  }
}
