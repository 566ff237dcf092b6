package dev.ravel.workers.engine;

import dev.ravel.workers.model.Sampling;
import java.util.Arrays;

/**
 * Picks a token from next-token logits (temperature, then top-p) with a caller-supplied uniform number, and
 * computes its log-probability. The uniforms come from {@link #uniform(long, int)}: draw {@code i} of a
 * SplitMix64 stream, indexed by completion position rather than by how many draws were made, so a request
 * recomputed after preemption (or sampled by any engine instance) replays exactly. One instance per
 * thread (it keeps scratch arrays).
 */
final class TokenSampler {
  private static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;

  private double[] weights = new double[0];
  private double[] sorted = new double[0];

  /** Draw {@code index} (0-based) of the SplitMix64 stream seeded with {@code seed}, in [0, 1). */
  static double uniform(long seed, int index) {
    long z = seed + (index + 1L) * GOLDEN_GAMMA;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    z = z ^ (z >>> 31);
    return (z >>> 11) * 0x1.0p-53;
  }

  /**
   * The token drawn with {@code u} in [0, 1) from {@code softmax(logits / temperature)} restricted to the
   * most likely tokens whose mass reaches {@code topP} (tokens tied with the last one kept are kept too).
   * Temperature 0 returns the most likely token (the lowest id among ties).
   *
   * @throws IllegalStateException when the logits hold a NaN or no finite value
   */
  int sample(float[] logits, double temperature, double topP, double u) {
    int n = logits.length;
    int argmax = argmax(logits);
    if (temperature == 0) {
      return argmax;
    }
    double max = logits[argmax] / temperature;
    if (Double.isInfinite(max)) {
      return argmax;
    }
    if (weights.length < n) {
      weights = new double[n];
    }
    double total = 0;
    for (int v = 0; v < n; v++) {
      double w = Math.exp(logits[v] / temperature - max);
      weights[v] = w;
      total += w;
    }
    double threshold = 0;
    double mass = total;
    if (topP < 1) {
      if (sorted.length < n) {
        sorted = new double[n];
      }
      System.arraycopy(weights, 0, sorted, 0, n);
      Arrays.sort(sorted, 0, n);
      double cum = 0;
      double goal = topP * total;
      for (int k = n - 1; k >= 0; k--) {
        cum += sorted[k];
        if (cum >= goal) {
          threshold = sorted[k];
          break;
        }
      }
      mass = 0;
      for (int v = 0; v < n; v++) {
        if (weights[v] >= threshold) {
          mass += weights[v];
        }
      }
    }
    double target = u * mass;
    double acc = 0;
    int last = argmax;
    for (int v = 0; v < n; v++) {
      double w = weights[v];
      if (w > 0 && w >= threshold) {
        acc += w;
        last = v;
        if (acc > target) {
          return v;
        }
      }
    }
    return last;
  }

  /**
   * {@code log softmax(logits / temperature)[token]}, temperature 0 counting as 1, over the whole
   * vocabulary (no top-p truncation): the behaviour log-prob of a sampled token. This is
   * {@link Sampling#logSoftmax}, the kernel behind the trainer's {@link Sampling#logProb}, so the engine
   * and the trainer compute the same value from the same logits. Unlike {@code logProb} it does not check
   * its arguments (the engine calls it after {@link #sample} has vetted the logits), and it accepts a
   * {@code +Infinity} logit: 0 for the token at that value, {@code -Infinity} for the others.
   */
  static float logprob(float[] logits, int token, double temperature) {
    return Sampling.logSoftmax(logits, token, temperature);
  }

  private static int argmax(float[] logits) {
    int best = -1;
    float bestValue = Float.NEGATIVE_INFINITY;
    for (int v = 0; v < logits.length; v++) {
      float l = logits[v];
      if (Float.isNaN(l)) {
        throw new IllegalStateException("the model produced a NaN logit (token " + v + ")");
      }
      if (best < 0 ? l > Float.NEGATIVE_INFINITY : l > bestValue) {
        best = v;
        bestValue = l;
      }
    }
    if (best < 0) {
      throw new IllegalStateException("the model produced no finite logit");
    }
    return best;
  }
}
