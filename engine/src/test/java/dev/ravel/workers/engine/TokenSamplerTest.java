package dev.ravel.workers.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

final class TokenSamplerTest {
  private final TokenSampler sampler = new TokenSampler();

  @Test
  void sample_temperatureZero_picksTheLowestMostLikelyToken() {
    float[] logits = {0.1f, 2f, -1f, 2f};

    for (double u : new double[] {0.0, 0.5, 0.999}) {
      assertThat(sampler.sample(logits, 0.0, 1.0, u)).isEqualTo(1);
    }
  }

  @Test
  void sample_manyDraws_followTheSoftmaxAtTheTemperature() {
    float[] logits = {0f, (float) Math.log(3), Float.NEGATIVE_INFINITY};
    int draws = 20_000;
    int[] counts = new int[3];
    for (int i = 0; i < draws; i++) {
      counts[sampler.sample(logits, 1.0, 1.0, TokenSampler.uniform(77, i))]++;
    }

    // p = (0.25, 0.75, 0): binomial sd of the share of token 0 is sqrt(.25 * .75 / 20000) = 0.003
    assertThat(counts[0] / (double) draws).isCloseTo(0.25, within(0.015));
    assertThat(counts[2]).isZero();
  }

  @Test
  void sample_topP_onlyDrawsFromTheNucleus() {
    float[] logits = {(float) Math.log(0.6), (float) Math.log(0.3), (float) Math.log(0.1)};

    for (int i = 0; i < 2000; i++) {
      assertThat(sampler.sample(logits, 1.0, 0.5, TokenSampler.uniform(3, i))).isEqualTo(0);
      assertThat(sampler.sample(logits, 1.0, 0.85, TokenSampler.uniform(3, i))).isIn(0, 1);
    }
  }

  @Test
  void sample_nanLogit_isAnError() {
    assertThatThrownBy(() -> sampler.sample(new float[] {0f, Float.NaN}, 1.0, 1.0, 0.3))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("NaN");
  }

  @Test
  void logprob_isLogSoftmaxAtTheTemperatureWithZeroCountingAsOne() {
    float[] logits = {1f, 2f, 3f};
    double z = Math.exp(1) + Math.exp(2) + Math.exp(3);
    double zHalf = Math.exp(2) + Math.exp(4) + Math.exp(6);

    assertThat((double) TokenSampler.logprob(logits, 2, 1.0)).isCloseTo(3 - Math.log(z), within(1e-6));
    assertThat((double) TokenSampler.logprob(logits, 2, 0.0)).isCloseTo(3 - Math.log(z), within(1e-6));
    assertThat((double) TokenSampler.logprob(logits, 0, 0.5)).isCloseTo(2 - Math.log(zHalf), within(1e-6));
  }

  @Test
  void uniform_dependsOnlyOnSeedAndPosition() {
    assertThat(TokenSampler.uniform(5, 9)).isEqualTo(TokenSampler.uniform(5, 9));
    assertThat(TokenSampler.uniform(5, 9)).isNotEqualTo(TokenSampler.uniform(6, 9));
    double sum = 0;
    for (int i = 0; i < 10_000; i++) {
      double u = TokenSampler.uniform(1, i);
      assertThat(u).isGreaterThanOrEqualTo(0).isLessThan(1);
      sum += u;
    }
    assertThat(sum / 10_000).isCloseTo(0.5, within(0.02));
  }

  @Test
  void unitHash_sharesOfManyIds_matchTheRatio() {
    int kept = 0;
    for (int i = 0; i < 100_000; i++) {
      if (RequestSampler.unitHash("req-" + i) < 0.1) {
        kept++;
      }
    }
    // sd of the count: sqrt(1e5 * 0.1 * 0.9) = 95
    assertThat(kept).isBetween(9_500, 10_500);
    assertThat(new RequestSampler(true, 0.0, Long.MAX_VALUE).keepReason("x", false, 0, 0)).isNull();
    assertThat(new RequestSampler(true, 1.0, Long.MAX_VALUE).keepReason("x", false, 0, 0)).isEqualTo("ratio");
    assertThat(new RequestSampler(false, 1.0, 0).keepReason("x", true, 3, 10)).isNull();
  }
}
