package dev.ravel.workers.grpo;

/**
 * Per-token estimators of KL(policy || reference) ({@code grpo.kl_estimator}; Schulman 2020, "Approximating KL
 * Divergence"). With {@code logp} the policy's log-prob of the sampled token, {@code ref} the reference's and
 * {@code delta = ref - logp}:
 * <ul>
 *   <li>{@link #K1}: {@code -delta} (unbiased, high variance, may be negative);
 *   <li>{@link #K2}: {@code delta^2 / 2} (low variance, biased);
 *   <li>{@link #K3}: {@code e^delta - delta - 1} (unbiased, never negative; GRPO's);
 *   <li>{@link #LOW_VAR_KL}: k3 with {@code delta} clamped to [-20, 20] and the estimate to at most 10 (verl's
 *       {@code low_var_kl}): outside the clamps the token gives no gradient.
 * </ul>
 */
public enum KlEstimator {
  K1("k1"),
  K2("k2"),
  K3("k3"),
  LOW_VAR_KL("low_var_kl");

  /** {@link #LOW_VAR_KL}'s clamp of {@code delta}. */
  static final double LOW_VAR_DELTA = 20;
  /** {@link #LOW_VAR_KL}'s upper clamp of the estimate. */
  static final double LOW_VAR_MAX = 10;

  private final String configName;

  KlEstimator(String configName) {
    this.configName = configName;
  }

  /** The name in run configs and on the wire to Python workers. */
  public String configName() {
    return configName;
  }

  /** The estimator named {@code name}; an unknown name is an {@link IllegalArgumentException} listing the valid ones. */
  public static KlEstimator parse(String name) {
    return Names.parse(KlEstimator.class, name, KlEstimator::configName);
  }

  /** The estimate for one token. */
  public double value(double logp, double ref) {
    double delta = ref - logp;
    return switch (this) {
      case K1 -> -delta;
      case K2 -> 0.5 * delta * delta;
      case K3 -> Math.exp(delta) - delta - 1;
      case LOW_VAR_KL -> {
        double d = Math.max(-LOW_VAR_DELTA, Math.min(LOW_VAR_DELTA, delta));
        yield Math.min(LOW_VAR_MAX, Math.max(-LOW_VAR_MAX, Math.exp(d) - d - 1));
      }
    };
  }

  /** {@code d value / d logp} (0 where a clamp holds). */
  public double derivative(double logp, double ref) {
    double delta = ref - logp;
    return switch (this) {
      case K1 -> 1;
      case K2 -> -delta;
      case K3 -> 1 - Math.exp(delta);
      case LOW_VAR_KL -> {
        if (delta < -LOW_VAR_DELTA || delta > LOW_VAR_DELTA || Math.exp(delta) - delta - 1 > LOW_VAR_MAX) {
          yield 0;
        }
        yield 1 - Math.exp(delta);
      }
    };
  }
}
