package dev.ravel.workers.model;

import java.util.Arrays;
import java.util.Comparator;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Choosing the next token from logits, and the log-probability a policy gives a token. All arithmetic is
 * in double with the maximum logit subtracted first, so large logits neither overflow nor lose the tail.
 */
public final class Sampling {
  private Sampling() {}

  /**
   * Samples a token id from {@code softmax(logits / temperature)} restricted to its nucleus: the smallest
   * set of most likely tokens whose probabilities sum to at least {@code topP} (renormalised). Temperature
   * 0 is greedy decoding: the arg max (the lowest id on ties), drawing nothing from {@code rng}.
   *
   * @param temperature {@code >= 0}
   * @param topP in {@code (0, 1]}; 1 samples from the whole distribution
   */
  public static int sample(float[] logits, double temperature, double topP, RandomGenerator rng) {
    checkLogits(logits);
    checkTemperature(temperature);
    if (!(topP > 0 && topP <= 1)) {
      throw new IllegalArgumentException("topP must be in (0, 1], got " + topP);
    }
    Objects.requireNonNull(rng, "rng");
    if (temperature == 0) {
      return argMax(logits);
    }
    double max = logits[argMax(logits)];
    double[] w = new double[logits.length];
    double total = 0;
    for (int i = 0; i < logits.length; i++) {
      w[i] = Math.exp((logits[i] - max) / temperature);
      total += w[i];
    }
    if (topP < 1) {
      total = keepNucleus(w, total, topP);
    }
    double u = rng.nextDouble() * total;
    int last = -1;
    for (int i = 0; i < w.length; i++) {
      if (w[i] > 0) {
        last = i;
        u -= w[i];
        if (u < 0) {
          return i;
        }
      }
    }
    return last; // rounding left u marginally above zero
  }

  /**
   * {@code log softmax(logits / temperature)[token]}, over the whole vocabulary (no top-p truncation).
   * Temperature 0 (greedy decoding) is treated as 1, as is usual for recording behaviour log-probs. Checks
   * its arguments, then runs {@link #logSoftmax}.
   */
  public static float logProb(float[] logits, int token, double temperature) {
    checkLogits(logits);
    checkTemperature(temperature);
    if (token < 0 || token >= logits.length) {
      throw new IllegalArgumentException("token " + token + " is outside [0, " + logits.length + ")");
    }
    return logSoftmax(logits, token, temperature);
  }

  /**
   * The one log-softmax kernel: {@code log softmax(logits / temperature)[token]} over the whole vocabulary,
   * temperature 0 counting as 1, computed in double with the largest scaled logit subtracted first and
   * rounded to float once. {@link #logProb} (the trainer's log-probs) is this plus argument checks, and the
   * inference engine's behaviour log-probs are this without them, so the two agree bit for bit on the
   * same logits and temperature: a second copy cannot drift and skew the GRPO importance ratio.
   *
   * <p>No argument checks: for callers that have already vetted their logits (no NaN) and token (in
   * range). When the largest scaled logit is infinite (a {@code +Infinity} logit, which {@link #logProb}
   * rejects, or a temperature so small that {@code logit / temperature} overflows a double), the result
   * is 0 for a token whose scaled logit equals it and {@code -Infinity} for the others.
   *
   * @param temperature {@code >= 0}
   */
  public static float logSoftmax(float[] logits, int token, double temperature) {
    double t = temperature == 0 ? 1 : temperature;
    double max = logits[argMax(logits)] / t;
    double z = logits[token] / t;
    if (Double.isInfinite(max)) {
      return z == max ? 0f : Float.NEGATIVE_INFINITY;
    }
    double sum = 0;
    for (float l : logits) {
      sum += Math.exp(l / t - max);
    }
    return (float) (z - max - Math.log(sum));
  }

  /** Fills {@code probs} with {@code softmax(logits / temperature)} (temperature 0 treated as 1). */
  public static void softmax(float[] logits, double temperature, double[] probs) {
    checkLogits(logits);
    checkTemperature(temperature);
    if (probs.length != logits.length) {
      throw new IllegalArgumentException("probs: length " + probs.length + " is not " + logits.length);
    }
    double t = temperature == 0 ? 1 : temperature;
    double max = logits[argMax(logits)];
    double total = 0;
    for (int i = 0; i < logits.length; i++) {
      probs[i] = Math.exp((logits[i] - max) / t);
      total += probs[i];
    }
    for (int i = 0; i < probs.length; i++) {
      probs[i] /= total;
    }
  }

  /** The index of the largest logit, the lowest on ties. */
  public static int argMax(float[] logits) {
    int best = 0;
    for (int i = 1; i < logits.length; i++) {
      if (logits[i] > logits[best]) {
        best = i;
      }
    }
    return best;
  }

  /** Zeroes the weights outside the nucleus and returns the remaining total. */
  private static double keepNucleus(double[] w, double total, double topP) {
    Integer[] order = new Integer[w.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, Comparator.<Integer>comparingDouble(i -> -w[i]).thenComparingInt(i -> i));
    double need = topP * total;
    double kept = 0;
    int k = 0;
    while (k < order.length && (k == 0 || kept < need)) {
      kept += w[order[k]];
      k++;
    }
    for (int i = k; i < order.length; i++) {
      w[order[i]] = 0;
    }
    return kept;
  }

  private static void checkLogits(float[] logits) {
    Objects.requireNonNull(logits, "logits");
    if (logits.length == 0) {
      throw new IllegalArgumentException("logits must not be empty");
    }
    for (int i = 0; i < logits.length; i++) {
      if (Float.isNaN(logits[i]) || logits[i] == Float.POSITIVE_INFINITY) {
        throw new IllegalArgumentException("logits[" + i + "] is " + logits[i]);
      }
    }
    if (logits[argMax(logits)] == Float.NEGATIVE_INFINITY) {
      throw new IllegalArgumentException("logits: every entry is -Infinity");
    }
  }

  private static void checkTemperature(double temperature) {
    if (!(temperature >= 0) || Double.isInfinite(temperature)) {
      throw new IllegalArgumentException("temperature must be finite and >= 0, got " + temperature);
    }
  }
}
