package dev.ravel.workers.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

final class GenerationTest {
  private final TinyLm lm = TinyLm.of(ModelWeights.init(ModelSpec.tiny(14), 9));
  private final int[] prompt = {3, 10, 4, 12};

  @Test
  void sample_logprobsAreThoseOfTheModelAtTheSamplingTemperature() {
    Generation.Completion c = Generation.sample(lm, prompt, 13, 6, 0.7, 1, new SplittableRandom(4));

    int[] seq = concat(prompt, c.tokens());
    for (int t = 0; t < c.tokens().length; t++) {
      float[] logits = lm.logits(seq, prompt.length + t);
      assertThat(c.logprobs()[t]).isEqualTo(Sampling.logProb(logits, seq[prompt.length + t], 0.7));
    }
  }

  @Test
  void sample_greedyFollowsTheArgMaxChain() {
    Generation.Completion c = Generation.sample(lm, prompt, 13, 5, 0, 1, new SplittableRandom(4));

    int[] seq = concat(prompt, c.tokens());
    for (int t = 0; t < c.tokens().length; t++) {
      assertThat(seq[prompt.length + t]).isEqualTo(Sampling.argMax(lm.logits(seq, prompt.length + t)));
    }
  }

  @Test
  void sample_stopsRightAfterEosOrAtTheBudget() {
    SplittableRandom rng = new SplittableRandom(2);
    for (int i = 0; i < 200; i++) {
      Generation.Completion c = Generation.sample(lm, prompt, 13, 3, 1, 1, rng);
      int[] tokens = c.tokens();
      assertThat(tokens.length).isBetween(1, 3);
      int eosAt = Arrays.stream(tokens).boxed().toList().indexOf(13);
      if (c.stopped()) {
        assertThat(eosAt).isEqualTo(tokens.length - 1);
      } else {
        assertThat(eosAt).isEqualTo(-1);
        assertThat(tokens).hasSize(3);
      }
    }
  }

  private static int[] concat(int[] a, int[] b) {
    int[] s = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, s, a.length, b.length);
    return s;
  }
}
