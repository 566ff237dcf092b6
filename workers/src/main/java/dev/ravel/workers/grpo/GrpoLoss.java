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
   * Evaluates the loss of {@code batch} under {@code policy} and its gradient.
   *
   * @param advantages one per trajectory (see {@link Advantages#groupRelative})
   * @param referenceLogProbs per trajectory, the reference policy's log-prob of each completion token
   */
  public static Result compute(TinyLm policy, List<Trajectory> batch, double[] advantages,
      float[][] referenceLogProbs, GrpoConfig config) {
    Objects.requireNonNull(policy, "policy");
    Objects.requireNonNull(batch, "batch");
    Objects.requireNonNull(advantages, "advantages");
    Objects.requireNonNull(referenceLogProbs, "referenceLogProbs");
    Objects.requireNonNull(config, "config");
    int b = batch.size();
    if (b == 0) {
      throw new IllegalArgumentException("batch must not be empty");
    }
    if (advantages.length != b) {
      throw new IllegalArgumentException("advantages: " + advantages.length + " for a batch of " + b);
    }
    if (referenceLogProbs.length != b) {
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
      float[] ref = referenceLogProbs[i];
      if (ref == null || ref.length != len) {
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
        double unclipped = ratio * a;
        double clippedTerm = Math.max(1 - eps, Math.min(1 + eps, ratio)) * a;
        boolean isClipped = clippedTerm < unclipped;
        double surrogate = isClipped ? clippedTerm : unclipped;
        double delta = ref[t] - logp;
        double d = Math.exp(delta) - delta - 1;
        seqObjective += surrogate - beta * d;
        seqKl += d;
        ratioSum += ratio;
        clipped += isClipped ? 1 : 0;
        // dJ_t/dlogp: r*A through the unclipped branch (0 once clipped), and -beta * dD/dlogp = -beta * (1 - e^delta)
        double dObjective = (isClipped ? 0 : unclipped) - beta * (1 - Math.exp(delta));
        double dLoss = -dObjective / ((double) len * b);
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
