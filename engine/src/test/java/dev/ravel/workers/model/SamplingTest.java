package dev.ravel.workers.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

final class SamplingTest {
  private static final float[] LOGITS = {0.5f, 2.0f, -1.0f, 1.0f, 0.0f};

  @Test
  void sample_temperatureZeroIsArgMax() {
    SplittableRandom rng = new SplittableRandom(1);
    for (int i = 0; i < 100; i++) {
      assertThat(Sampling.sample(LOGITS, 0, 1, rng)).isEqualTo(1);
    }
  }

  @Test
  void sample_tinyTopPIsArgMax() {
    SplittableRandom rng = new SplittableRandom(1);
    for (int i = 0; i < 1000; i++) {
      assertThat(Sampling.sample(LOGITS, 1, 1e-9, rng)).isEqualTo(1);
    }
  }

  @Test
  void sample_frequenciesAtTemperatureOneMatchSoftmax() {
    int n = 200_000;
    int[] counts = new int[LOGITS.length];
    SplittableRandom rng = new SplittableRandom(7);
    for (int i = 0; i < n; i++) {
      counts[Sampling.sample(LOGITS, 1, 1, rng)]++;
    }
    double[] p = softmax(LOGITS, 1);
    for (int v = 0; v < p.length; v++) {
      double stdErr = Math.sqrt(p[v] * (1 - p[v]) / n);
      assertThat(counts[v] / (double) n).as("token %d", v).isCloseTo(p[v], within(5 * stdErr));
    }
  }

  @Test
  void sample_temperatureSharpensTheDistribution() {
    int n = 50_000;
    int cold = 0;
    int hot = 0;
    SplittableRandom rng = new SplittableRandom(3);
    for (int i = 0; i < n; i++) {
      cold += Sampling.sample(LOGITS, 0.25, 1, rng) == 1 ? 1 : 0;
      hot += Sampling.sample(LOGITS, 4, 1, rng) == 1 ? 1 : 0;
    }
    assertThat(cold / (double) n).isCloseTo(softmax(LOGITS, 0.25)[1], within(0.01));
    assertThat(hot / (double) n).isCloseTo(softmax(LOGITS, 4)[1], within(0.01));
  }

  @Test
  void sample_topPNeverPicksOutsideTheNucleusAndRenormalisesInside() {
    // probabilities about 0.51, 0.31, 0.11, 0.04, 0.03: the 0.8 nucleus is {0, 1}
    float[] logits = {3.0f, 2.5f, 1.5f, 0.5f, 0.2f};
    int n = 50_000;
    int[] counts = new int[logits.length];
    SplittableRandom rng = new SplittableRandom(5);
    for (int i = 0; i < n; i++) {
      counts[Sampling.sample(logits, 1, 0.8, rng)]++;
    }
    double[] p = softmax(logits, 1);
    assertThat(counts[2] + counts[3] + counts[4]).isZero();
    assertThat(counts[0] / (double) n).isCloseTo(p[0] / (p[0] + p[1]), within(0.01));
  }

  @Test
  void sample_hugeLogitsStayFinite() {
    float[] logits = {1e30f, 1e30f - 1e24f, -1e30f};

    assertThat(Sampling.sample(logits, 1, 1, new SplittableRandom(1))).isBetween(0, 1);
    assertThat(Sampling.logProb(logits, 0, 1)).isEqualTo(0f);
    assertThat(Sampling.logProb(new float[] {1000f, 0f}, 1, 1)).isCloseTo(-1000f, within(1e-3f));
  }

  @Test
  void logProb_matchesManualLogSoftmax() {
    for (double t : new double[] {0.5, 1, 2}) {
      double[] p = softmax(LOGITS, t);
      for (int v = 0; v < LOGITS.length; v++) {
        assertThat((double) Sampling.logProb(LOGITS, v, t)).as("t=%s v=%d", t, v).isCloseTo(Math.log(p[v]),
            within(1e-6));
      }
    }
  }

  @Test
  void logProb_temperatureZeroCountsAsOne() {
    assertThat(Sampling.logProb(LOGITS, 3, 0)).isEqualTo(Sampling.logProb(LOGITS, 3, 1));
  }

  @Test
  void logProb_negativeInfinityLogitIsAnImpossibleToken() {
    float[] logits = {0f, Float.NEGATIVE_INFINITY};

    assertThat(Sampling.logProb(logits, 1, 1)).isEqualTo(Float.NEGATIVE_INFINITY);
    assertThat(Sampling.sample(logits, 1, 1, new SplittableRandom(1))).isZero();
  }

  @Test
  void logSoftmax_validArguments_isLogProbBitForBit() {
    for (double t : new double[] {0, 0.5, 1, 2}) {
      for (int v = 0; v < LOGITS.length; v++) {
        assertThat(Sampling.logSoftmax(LOGITS, v, t)).isEqualTo(Sampling.logProb(LOGITS, v, t));
      }
    }
  }

  @Test
  void logSoftmax_scaledMaximumOverflows_isZeroAtTheMaximumAndMinusInfinityElsewhere() {
    float[] logits = {1f, 3f, -2f};
    double tiny = Double.MIN_VALUE;

    assertThat(Sampling.logSoftmax(logits, 1, tiny)).isEqualTo(0f);
    assertThat(Sampling.logSoftmax(logits, 2, tiny)).isEqualTo(Float.NEGATIVE_INFINITY);
    assertThat(Sampling.logProb(logits, 1, tiny)).isEqualTo(0f);
    assertThat(Sampling.logSoftmax(new float[] {0f, Float.POSITIVE_INFINITY}, 1, 1)).isEqualTo(0f);
    assertThat(Sampling.logSoftmax(new float[] {0f, Float.POSITIVE_INFINITY}, 0, 1))
        .isEqualTo(Float.NEGATIVE_INFINITY);
  }

  @Test
  void sample_invalidArgumentsNameTheParameter() {
    SplittableRandom rng = new SplittableRandom(1);
    assertThatThrownBy(() -> Sampling.sample(LOGITS, -1, 1, rng)).hasMessageStartingWith("temperature");
    assertThatThrownBy(() -> Sampling.sample(LOGITS, 1, 0, rng)).hasMessageStartingWith("topP");
    assertThatThrownBy(() -> Sampling.sample(new float[] {Float.NaN}, 1, 1, rng)).hasMessageStartingWith("logits[0]");
    assertThatThrownBy(() -> Sampling.logProb(LOGITS, 5, 1)).hasMessageStartingWith("token 5");
  }

  private static double[] softmax(float[] logits, double t) {
    double[] p = new double[logits.length];
    double sum = 0;
    for (int i = 0; i < p.length; i++) {
      p[i] = Math.exp(logits[i] / t);
      sum += p[i];
    }
    for (int i = 0; i < p.length; i++) {
      p[i] /= sum;
    }
    return p;
  }
}
