package dev.ravel.workers.grpo;

import dev.ravel.workers.model.Sampling;
import dev.ravel.workers.model.TinyLm;
import java.util.List;
import java.util.Objects;

/**
 * The GRPO objective of one batch and its gradient, independent of any optimizer state. For
 * {@code B} trajectories {@code o_i} with group-relative advantages {@code A_i} (Shao et al. 2024, eq. 3):
 * <pre>
 *   J(theta) = 1/B sum_i 1/|o_i| sum_t [ min(r_it A_i, clip(r_it, 1-eps, 1+eps) A_i) - beta D_it ]
 *   r_it = pi_theta(o_it | q, o_i,&lt;t) / pi_old(o_it | q, o_i,&lt;t)
 *   D_it = pi_ref/pi_theta - log(pi_ref/pi_theta) - 1          (the k3 estimator of KL(pi_theta || pi_ref))
 *   loss = -J(theta)
 * </pre>
 * {@code pi_old} is the behaviour policy whose log-probs come with each {@link Trajectory}, so the ratio is
 * an importance weight when rollouts lag the learner (and exactly 1 on-policy). Tokens are averaged
 * within each sequence, then sequences are averaged (the paper's choice): every completion weighs the same
 * whatever its length. Log-probs are taken at the sampling temperature ({@code T = 0} counting as 1), like
 * the behaviour log-probs.
 */
public final class GrpoLoss {
  private GrpoLoss() {}

  /**
   * The value of the loss and what it measured; {@link #gradient()} is {@code dLoss/dParams} (the
   * result's own array).
   */
  public record Result(double loss, double kl, double clipFraction, double meanRatio, double meanReward,
      int tokens, int sequences, float[] gradient) {}

  /**
   * The objective on per-token log-probs, the part of the loss that does not depend on the model: for
   * sequence {@code i} and completion token {@code t}, {@code policy[i][t]} is the policy's log-prob (at the
   * sampling temperature), {@code behaviour[i][t]} the behaviour policy's and {@code reference[i][t]} the
   * reference's. {@code gradient[i][t]} is {@code dLoss/dpolicy[i][t]}. Ravel's Python trainer computes the
   * same (a test holds the two equal).
   */
  public record Objective(double loss, double kl, double clipFraction, double meanRatio, int tokens,
      double[][] gradient) {}

  /** {@link Objective} of one batch; every sequence needs at least one token and the three arrays one shape. */
  public static Objective objective(double[][] policy, double[][] behaviour, double[][] reference,
      double[] advantages, double clipEpsilon, double klBeta) {
    int b = policy.length;
    if (b == 0 || behaviour.length != b || reference.length != b || advantages.length != b) {
      throw new IllegalArgumentException("policy, behaviour, reference and advantages need one entry per sequence ("
          + b + ", " + behaviour.length + ", " + reference.length + ", " + advantages.length + "), at least one");
    }
    double[][] grad = new double[b][];
    double loss = 0;
    double kl = 0;
    double ratioSum = 0;
    int clipped = 0;
    int tokens = 0;
    for (int i = 0; i < b; i++) {
      int len = policy[i].length;
      if (len == 0 || behaviour[i].length != len || reference[i].length != len) {
        throw new IllegalArgumentException("sequence " + i + ": policy, behaviour and reference need the same"
            + " number of tokens (at least one), got " + len + ", " + behaviour[i].length + ", " + reference[i].length);
      }
      grad[i] = new double[len];
      double seqObjective = 0;
      double seqKl = 0;
      for (int t = 0; t < len; t++) {
        double ratio = Math.exp(policy[i][t] - behaviour[i][t]);
        double d = k3(policy[i][t], reference[i][t]);
        seqObjective += surrogate(ratio, advantages[i], clipEpsilon) - klBeta * d;
        seqKl += d;
        ratioSum += ratio;
        clipped += isClipped(ratio, advantages[i], clipEpsilon) ? 1 : 0;
        grad[i][t] = -dObjective(ratio, policy[i][t], reference[i][t], advantages[i], clipEpsilon, klBeta)
            / ((double) len * b);
      }
      loss -= seqObjective / len;
      kl += seqKl / len;
      tokens += len;
    }
    return new Objective(loss / b, kl / b, (double) clipped / tokens, ratioSum / tokens, tokens, grad);
  }

  /** Whether the clipped term is the smaller one: the token then contributes no policy gradient. */
  static boolean isClipped(double ratio, double advantage, double eps) {
    return Math.max(1 - eps, Math.min(1 + eps, ratio)) * advantage < ratio * advantage;
  }

  /** {@code min(r A, clip(r, 1-eps, 1+eps) A)}. */
  static double surrogate(double ratio, double advantage, double eps) {
    double unclipped = ratio * advantage;
    double clippedTerm = Math.max(1 - eps, Math.min(1 + eps, ratio)) * advantage;
    return clippedTerm < unclipped ? clippedTerm : unclipped;
  }

  /** The k3 estimate of KL for one token: {@code e^delta - delta - 1} with {@code delta = ref - logp}. */
  static double k3(double logp, double ref) {
    double delta = ref - logp;
    return Math.exp(delta) - delta - 1;
  }

  /**
   * {@code dJ_t/dlogp}: {@code r A} through the unclipped branch (0 once clipped), and
   * {@code -beta dD/dlogp = -beta (1 - e^delta)}.
   */
  static double dObjective(double ratio, double logp, double ref, double advantage, double eps, double beta) {
    double delta = ref - logp;
    return (isClipped(ratio, advantage, eps) ? 0 : ratio * advantage) - beta * (1 - Math.exp(delta));
  }

  /**
   * Evaluates the loss of {@code batch} under {@code policy} and its gradient.
   *
   * @param advantages one per trajectory (see {@link Advantages#groupRelative})
   * @param referenceLogProbs per trajectory, the reference policy's log-prob of each completion token; null
   *     when {@code config.klBeta()} is 0 (no KL term, and the result's {@code kl} is 0)
   */
  public static Result compute(TinyLm policy, List<Trajectory> batch, double[] advantages,
      float[][] referenceLogProbs, GrpoConfig config) {
    Objects.requireNonNull(policy, "policy");
    Objects.requireNonNull(batch, "batch");
    Objects.requireNonNull(advantages, "advantages");
    Objects.requireNonNull(config, "config");
    if (referenceLogProbs == null && config.klBeta() != 0) {
      throw new IllegalArgumentException("referenceLogProbs: needed when klBeta is " + config.klBeta() + " (not 0)");
    }
    int b = batch.size();
    if (b == 0) {
      throw new IllegalArgumentException("batch must not be empty");
    }
    if (advantages.length != b) {
      throw new IllegalArgumentException("advantages: " + advantages.length + " for a batch of " + b);
    }
    if (referenceLogProbs != null && referenceLogProbs.length != b) {
      throw new IllegalArgumentException("referenceLogProbs: " + referenceLogProbs.length + " for a batch of " + b);
    }
    double temperature = config.temperature() == 0 ? 1 : config.temperature();
    double eps = config.clipEpsilon();
    double beta = config.klBeta();

    float[] grad = policy.newGradient();
    int vocab = policy.vocabSize();
    double[] probs = new double[vocab];
    float[] dLogits = new float[vocab];
    double loss = 0;
    double kl = 0;
    double ratioSum = 0;
    int clipped = 0;
    int tokens = 0;
    double rewardSum = 0;
    for (int i = 0; i < b; i++) {
      Trajectory tr = batch.get(i);
      int len = tr.completionLength();
      float[] ref = referenceLogProbs == null ? null : referenceLogProbs[i];
      if (referenceLogProbs != null && (ref == null || ref.length != len)) {
        throw new IllegalArgumentException("referenceLogProbs[" + i + "]: needs one log-prob per completion token ("
            + len + ")");
      }
      int[] seq = tr.sequence();
      int promptLen = seq.length - len;
      double a = advantages[i];
      double seqObjective = 0;
      double seqKl = 0;
      for (int t = 0; t < len; t++) {
        int token = seq[promptLen + t];
        TinyLm.Trace trace = policy.trace(seq, promptLen + t);
        double logp = Sampling.logProb(trace.logits(), token, temperature);
        double ratio = Math.exp(logp - tr.logprob(t));
        boolean isClipped = isClipped(ratio, a, eps);
        // without a reference (klBeta 0) there is no KL term: the reference stands at the policy itself
        double refLogp = ref == null ? logp : ref[t];
        double d = k3(logp, refLogp);
        seqObjective += surrogate(ratio, a, eps) - beta * d;
        seqKl += d;
        ratioSum += ratio;
        clipped += isClipped ? 1 : 0;
        double dLoss = -dObjective(ratio, logp, refLogp, a, eps, beta) / ((double) len * b);
        // dlogp/dlogits_v = (onehot_v - softmax_v) / T
        Sampling.softmax(trace.logits(), temperature, probs);
        for (int v = 0; v < vocab; v++) {
          dLogits[v] = (float) (dLoss * ((v == token ? 1 : 0) - probs[v]) / temperature);
        }
        trace.backward(dLogits, grad);
      }
      loss -= seqObjective / len;
      kl += seqKl / len;
      tokens += len;
      rewardSum += tr.reward();
    }
    return new Result(loss / b, kl / b, (double) clipped / tokens, ratioSum / tokens, rewardSum / b, tokens, b,
        grad);
  }
}
