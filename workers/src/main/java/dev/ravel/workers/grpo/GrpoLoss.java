package dev.ravel.workers.grpo;

import dev.ravel.workers.model.Sampling;
import dev.ravel.workers.model.TinyLm;
import java.util.List;
import java.util.Objects;

/**
 * The GRPO objective of one batch and its gradient, independent of any optimizer state. It is computed in three
 * steps, each the same in Ravel's Python trainer ({@code ravel_workers/grpo.py}; {@code GrpoLossParityIT} holds
 * the two equal for every setting):
 * <ol>
 *   <li>{@link #advantages}: rewards (less {@code klBeta * sum_t KL_t} with {@code kl_in_reward}) become
 *       advantages {@code A_i = (r_i - mean(r_group)) / (scale + eps)} ({@link RewardScale}); a group of equal
 *       rewards has advantages of exactly 0 and, with {@code filter_zero_advantage}, is left out;
 *   <li>{@link #scales}: each sequence's normaliser {@code s_i} by the {@link LossType};
 *   <li>{@link #objective} / {@link #compute}: per completion token (Shao et al. 2024, eq. 3; DAPO's clip-higher;
 *       dual clip):
 * </ol>
 * <pre>
 *   r_it  = pi_theta(o_it) / pi_base(o_it)        base: behaviour, or with TIS the trainer's log-probs at the step's start
 *   w_it  = min(pi_old(o_it) / pi_behaviour(o_it), tis_cap)   with TIS, else 1 (no gradient)
 *   p_it  = min(r_it A_i, clip(r_it, 1 - eps_low, 1 + eps_high) A_i),  and for A_i &lt; 0 with c: max(p_it, c A_i)
 *   l_it  = w_it p_it - beta KL_est(pi_theta, pi_ref)_it                (no KL term with kl_in_reward)
 *   loss  = -sum_i s_i sum_t l_it
 * </pre>
 * Log-probs are taken at the sampling temperature ({@code T = 0} counting as 1), like the behaviour log-probs.
 * A token whose clipped (or dual-clipped) term is the one taken gives no policy gradient.
 */
public final class GrpoLoss {
  private GrpoLoss() {}

  /**
   * A batch's advantages.
   *
   * @param rewards the rewards the advantages came from (less the KL penalty with {@code kl_in_reward})
   * @param advantages one per sequence
   * @param kept whether each sequence is in the update (false for the groups {@code filter_zero_advantage} drops)
   * @param zeroAdvantageGroups groups whose rewards were all equal (no signal), dropped or not
   */
  public record Advantaged(double[] rewards, double[] advantages, boolean[] kept, int zeroAdvantageGroups) {
    /** Sequences in the update. */
    public int keptCount() {
      int n = 0;
      for (boolean k : kept) {
        n += k ? 1 : 0;
      }
      return n;
    }
  }

  /**
   * Step 1: advantages of {@code rewards} (consecutive runs of {@code groupSize} are groups).
   *
   * @param behaviour per sequence, the behaviour log-prob of each completion token (read with
   *     {@code kl_in_reward} only)
   * @param reference the reference's, in the same shape; may be null unless the KL is in the reward
   */
  public static Advantaged advantages(double[] rewards, int groupSize, double[][] behaviour, double[][] reference,
      LossSettings s) {
    Objects.requireNonNull(rewards, "rewards");
    double[] r = rewards.clone();
    if (s.klInReward() && s.klBeta() != 0) {
      if (reference == null || behaviour == null) {
        throw new IllegalArgumentException("reference: needed when the KL (klBeta " + s.klBeta() + ") is in the reward");
      }
      for (int i = 0; i < r.length; i++) {
        double kl = 0;
        for (int t = 0; t < behaviour[i].length; t++) {
          kl += s.klEstimator().value(behaviour[i][t], reference[i][t]);
        }
        r[i] -= s.klBeta() * kl;
      }
    }
    double[] a = Advantages.of(r, groupSize, s.scaleRewards(), s.advantageEps());
    boolean[] kept = new boolean[r.length];
    int zero = 0;
    for (int g = 0; g < r.length; g += groupSize) {
      boolean flat = Advantages.flat(r, g, groupSize);
      zero += flat ? 1 : 0;
      for (int i = g; i < g + groupSize; i++) {
        kept[i] = !(flat && s.filterZeroAdvantage());
      }
    }
    return new Advantaged(r, a, kept, zero);
  }

  /**
   * Step 2: the normaliser of each sequence, {@code loss = -sum_i scales[i] sum_t l_it} ({@link LossType}); 0 for a
   * sequence not {@code kept}. With {@code microBatchSize} above 0 ({@link LossType#BNPO} reads it) the batch is
   * taken in consecutive micro-batches of that many sequences.
   */
  public static double[] scales(int[] lengths, boolean[] kept, LossSettings s, int microBatchSize) {
    int n = lengths.length;
    if (kept.length != n) {
      throw new IllegalArgumentException("kept: " + kept.length + " flags for " + n + " sequences");
    }
    long keptSeqs = 0;
    long keptTokens = 0;
    for (int i = 0; i < n; i++) {
      if (kept[i]) {
        keptSeqs++;
        keptTokens += lengths[i];
      }
    }
    double[] out = new double[n];
    if (keptSeqs == 0) {
      return out;
    }
    int mb = microBatchSize > 0 ? microBatchSize : n;
    int micro = (n + mb - 1) / mb;
    for (int start = 0; start < n; start += mb) {
      long mbTokens = 0;
      for (int i = start; i < Math.min(n, start + mb); i++) {
        mbTokens += kept[i] ? lengths[i] : 0;
      }
      for (int i = start; i < Math.min(n, start + mb); i++) {
        if (!kept[i]) {
          continue;
        }
        out[i] = switch (s.lossType()) {
          case GRPO -> 1.0 / ((double) lengths[i] * keptSeqs);
          case BNPO -> 1.0 / ((double) mbTokens * micro);
          case DR_GRPO -> 1.0 / ((double) keptSeqs * s.maxNewTokens());
          case DAPO -> 1.0 / keptTokens;
        };
      }
    }
    return out;
  }

  /**
   * What a loss evaluation measured, as sums (so that micro-batches and passes add up): tokens, sequences, the
   * per-sequence token mean of the KL summed over sequences, tokens clipped low/high/dual, the ratio's sum and
   * max, the tokens whose importance weight reached {@code tis_cap}, and the sampled distribution's entropy.
   */
  public record Measures(long tokens, long sequences, double klSum, long clippedLow, long clippedHigh,
      long clippedDual, double ratioSum, double ratioMax, long truncated, double entropySum) {
    static final Measures NONE = new Measures(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** These and {@code o} together. */
    public Measures plus(Measures o) {
      return new Measures(tokens + o.tokens, sequences + o.sequences, klSum + o.klSum, clippedLow + o.clippedLow,
          clippedHigh + o.clippedHigh, clippedDual + o.clippedDual, ratioSum + o.ratioSum,
          Math.max(ratioMax, o.ratioMax), truncated + o.truncated, entropySum + o.entropySum);
    }

    /** The KL estimate: token mean within each sequence, then mean over sequences. */
    public double kl() {
      return sequences == 0 ? 0 : klSum / sequences;
    }

    /** Share of tokens whose clipped or dual-clipped term was taken (no policy gradient). */
    public double clipFraction() {
      return share(clippedLow + clippedHigh + clippedDual);
    }

    /** Share of tokens clipped at {@code 1 - eps_low} (negative advantages). */
    public double clipLowFraction() {
      return share(clippedLow);
    }

    /** Share of tokens clipped at {@code 1 + eps_high} (positive advantages). */
    public double clipHighFraction() {
      return share(clippedHigh);
    }

    /** Share of tokens held by the dual clip. */
    public double clipDualFraction() {
      return share(clippedDual);
    }

    /** Token mean of the ratio. */
    public double meanRatio() {
      return tokens == 0 ? 0 : ratioSum / tokens;
    }

    /** Share of tokens whose importance weight was truncated at {@code tis_cap}. */
    public double truncatedFraction() {
      return share(truncated);
    }

    /** Token mean of the entropy of the policy's distribution where each completion token was sampled. */
    public double meanEntropy() {
      return tokens == 0 ? 0 : entropySum / tokens;
    }

    private double share(long n) {
      return tokens == 0 ? 0 : (double) n / tokens;
    }
  }

  /** One token's objective and its derivative, with what it measured. */
  private static final class Acc {
    double loss;
    double klSeq;
    double klSum;
    long tokens;
    long sequences;
    long low;
    long high;
    long dual;
    double ratioSum;
    double ratioMax;
    long truncated;
    double entropySum;

    Measures measures() {
      return new Measures(tokens, sequences, klSum, low, high, dual, ratioSum, ratioMax, truncated, entropySum);
    }

    /**
     * Adds token {@code (logp, behaviour, old, ref)} of a sequence with advantage {@code a} and normaliser
     * {@code scale}; returns {@code dLoss/dlogp}. {@code ref} NaN: no reference.
     */
    double token(double logp, double behaviour, double old, double ref, double a, double scale, LossSettings s) {
      boolean tis = s.truncatedImportanceSampling();
      double ratio = Math.exp(logp - (tis ? old : behaviour));
      double weight = 1;
      if (tis) {
        double raw = Math.exp(old - behaviour);
        truncated += raw > s.tisCap() ? 1 : 0;
        weight = Math.min(raw, s.tisCap());
      }
      double unclipped = ratio * a;
      double clippedTerm = Math.max(1 - s.clipEpsilonLow(), Math.min(1 + s.clipEpsilonHigh(), ratio)) * a;
      boolean isClipped = clippedTerm < unclipped;
      double surrogate = isClipped ? clippedTerm : unclipped;
      boolean isDual = s.clipRatioC() > 0 && a < 0 && s.clipRatioC() * a > surrogate;
      if (isDual) {
        surrogate = s.clipRatioC() * a;
      }
      boolean hasRef = !Double.isNaN(ref);
      double kl = hasRef ? s.klEstimator().value(logp, ref) : 0;
      boolean klTerm = s.klInLoss() && hasRef;
      double objective = weight * surrogate - (klTerm ? s.klBeta() * kl : 0);
      double dObjective = weight * (isClipped || isDual ? 0 : ratio * a)
          - (klTerm ? s.klBeta() * s.klEstimator().derivative(logp, ref) : 0);
      loss -= scale * objective;
      klSeq += kl;
      tokens++;
      low += isClipped && a < 0 ? 1 : 0;
      high += isClipped && a > 0 ? 1 : 0;
      dual += isDual ? 1 : 0;
      ratioSum += ratio;
      ratioMax = Math.max(ratioMax, ratio);
      return -scale * dObjective;
    }

    void endSequence(int len) {
      klSum += klSeq / len;
      klSeq = 0;
      sequences++;
    }
  }

  /**
   * The objective on per-token log-probs, the part of the loss that does not depend on the model:
   * {@code gradient[i][t]} is {@code dLoss/dpolicy[i][t]}; {@code loss} is {@code -sum_i scales[i] sum_t l_it}.
   */
  public record Objective(double loss, Measures measures, double[][] gradient) {}

  /**
   * {@link Objective} of sequences with per-token log-probs of the policy (at the sampling temperature), the
   * behaviour policy, the trainer at the step's start ({@code old}; read with TIS only, may be null otherwise) and
   * the reference (null when there is none); every sequence needs at least one token and all arrays one shape.
   */
  public static Objective objective(double[][] policy, double[][] behaviour, double[][] old, double[][] reference,
      double[] advantages, double[] scales, LossSettings s) {
    int b = policy.length;
    if (b == 0 || behaviour.length != b || advantages.length != b || scales.length != b
        || (reference != null && reference.length != b) || (old != null && old.length != b)) {
      throw new IllegalArgumentException("policy, behaviour, old, reference, advantages and scales need one entry per"
          + " sequence (" + b + "), at least one");
    }
    requireOld(old, s);
    requireReference(reference, s);
    double[][] grad = new double[b][];
    Acc acc = new Acc();
    for (int i = 0; i < b; i++) {
      int len = policy[i].length;
      if (len == 0 || behaviour[i].length != len || (reference != null && reference[i].length != len)
          || (old != null && old[i].length != len)) {
        throw new IllegalArgumentException("sequence " + i + ": policy, behaviour, old and reference need the same"
            + " number of tokens (at least one)");
      }
      grad[i] = new double[len];
      for (int t = 0; t < len; t++) {
        grad[i][t] = acc.token(policy[i][t], behaviour[i][t], old == null ? Double.NaN : old[i][t],
            reference == null ? Double.NaN : reference[i][t], advantages[i], scales[i], s);
      }
      acc.endSequence(len);
    }
    return new Objective(acc.loss, acc.measures(), grad);
  }

  /** A batch's loss taken as the trainers take it: its advantages, normalisers, and objective over every micro-batch. */
  public record Evaluation(Advantaged advantaged, double[] scales, Objective objective) {}

  /**
   * The three steps over a whole batch of per-token log-prob arrays, the batch taken in micro-batches of
   * {@code microBatchSize} sequences (0: at once): the gradient rows are each micro-batch's, the loss and
   * measures their sums. What both trainers compute for one pass, without a model.
   */
  public static Evaluation evaluate(double[][] policy, double[][] behaviour, double[][] old, double[][] reference,
      double[] rewards, int groupSize, LossSettings s, int microBatchSize) {
    int n = policy.length;
    Advantaged adv = advantages(rewards, groupSize, behaviour, reference, s);
    int[] lengths = new int[n];
    for (int i = 0; i < n; i++) {
      lengths[i] = policy[i].length;
    }
    double[] scales = scales(lengths, adv.kept(), s, microBatchSize);
    int mb = microBatchSize > 0 ? microBatchSize : n;
    double[][] grad = new double[n][];
    double loss = 0;
    Measures measures = Measures.NONE;
    for (int from = 0; from < n; from += mb) {
      int to = Math.min(n, from + mb);
      Objective o = objective(java.util.Arrays.copyOfRange(policy, from, to),
          java.util.Arrays.copyOfRange(behaviour, from, to),
          old == null ? null : java.util.Arrays.copyOfRange(old, from, to),
          reference == null ? null : java.util.Arrays.copyOfRange(reference, from, to),
          java.util.Arrays.copyOfRange(adv.advantages(), from, to), java.util.Arrays.copyOfRange(scales, from, to), s);
      System.arraycopy(o.gradient(), 0, grad, from, to - from);
      loss += o.loss();
      measures = measures.plus(o.measures());
    }
    return new Evaluation(adv, scales, new Objective(loss, measures, grad));
  }

  /**
   * The value of the loss over a (micro-)batch and what it measured; {@link #gradient()} is {@code dLoss/dParams}
   * (the result's own array).
   */
  public record Result(double loss, Measures measures, float[] gradient) {}

  /**
   * Evaluates the loss of {@code batch} under {@code policy} and its gradient with respect to the policy's
   * parameters.
   *
   * @param advantages one per trajectory ({@link #advantages})
   * @param scales one per trajectory ({@link #scales}); a sequence with scale 0 is measured but not differentiated
   * @param referenceLogProbs per trajectory, the reference policy's log-prob of each completion token; null when
   *     there is no reference (then the measured KL is 0)
   * @param oldLogProbs per trajectory, the trainer's log-probs at the step's start (with TIS; else null)
   */
  public static Result compute(TinyLm policy, List<Trajectory> batch, double[] advantages, double[] scales,
      float[][] referenceLogProbs, float[][] oldLogProbs, GrpoConfig config) {
    Objects.requireNonNull(policy, "policy");
    Objects.requireNonNull(batch, "batch");
    Objects.requireNonNull(advantages, "advantages");
    Objects.requireNonNull(scales, "scales");
    LossSettings s = config.lossSettings();
    int b = batch.size();
    if (b == 0) {
      throw new IllegalArgumentException("batch must not be empty");
    }
    if (advantages.length != b || scales.length != b) {
      throw new IllegalArgumentException("advantages/scales: " + advantages.length + "/" + scales.length
          + " for a batch of " + b);
    }
    if (referenceLogProbs != null && referenceLogProbs.length != b) {
      throw new IllegalArgumentException("referenceLogProbs: " + referenceLogProbs.length + " for a batch of " + b);
    }
    requireReference(referenceLogProbs, s);
    requireOld(oldLogProbs, s);
    double temperature = config.temperature() == 0 ? 1 : config.temperature();

    float[] grad = policy.newGradient();
    int vocab = policy.vocabSize();
    double[] probs = new double[vocab];
    float[] dLogits = new float[vocab];
    Acc acc = new Acc();
    for (int i = 0; i < b; i++) {
      Trajectory tr = batch.get(i);
      int len = tr.completionLength();
      float[] ref = referenceLogProbs == null ? null : referenceLogProbs[i];
      if (referenceLogProbs != null && (ref == null || ref.length != len)) {
        throw new IllegalArgumentException("referenceLogProbs[" + i + "]: needs one log-prob per completion token ("
            + len + ")");
      }
      float[] old = oldLogProbs == null ? null : oldLogProbs[i];
      if (oldLogProbs != null && (old == null || old.length != len)) {
        throw new IllegalArgumentException("oldLogProbs[" + i + "]: needs one log-prob per completion token (" + len
            + ")");
      }
      int[] seq = tr.sequence();
      int promptLen = seq.length - len;
      for (int t = 0; t < len; t++) {
        int token = seq[promptLen + t];
        TinyLm.Trace trace = policy.trace(seq, promptLen + t);
        double logp = Sampling.logProb(trace.logits(), token, temperature);
        double dLoss = acc.token(logp, tr.logprob(t), old == null ? Double.NaN : old[t],
            ref == null ? Double.NaN : ref[t], advantages[i], scales[i], s);
        Sampling.softmax(trace.logits(), temperature, probs);
        double entropy = 0;
        for (int v = 0; v < vocab; v++) {
          entropy -= probs[v] > 0 ? probs[v] * Math.log(probs[v]) : 0;
        }
        acc.entropySum += entropy;
        if (scales[i] == 0) {
          continue; // measured, not in the update
        }
        // dlogp/dlogits_v = (onehot_v - softmax_v) / T
        for (int v = 0; v < vocab; v++) {
          dLogits[v] = (float) (dLoss * ((v == token ? 1 : 0) - probs[v]) / temperature);
        }
        trace.backward(dLogits, grad);
      }
      acc.endSequence(len);
    }
    return new Result(acc.loss, acc.measures(), grad);
  }

  private static void requireOld(Object old, LossSettings s) {
    if (old == null && s.truncatedImportanceSampling()) {
      throw new IllegalArgumentException("old log-probs: needed with truncated importance sampling (tisCap "
          + s.tisCap() + ")");
    }
  }

  private static void requireReference(Object reference, LossSettings s) {
    if (reference == null && s.klInLoss()) {
      throw new IllegalArgumentException("referenceLogProbs: needed when klBeta is " + s.klBeta() + " (not 0)");
    }
  }
}
