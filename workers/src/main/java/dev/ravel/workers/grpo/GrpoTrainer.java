package dev.ravel.workers.grpo;

import dev.ravel.workers.model.AdamW;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.Sampling;
import dev.ravel.workers.model.TinyLm;
import java.util.List;
import java.util.Objects;

/**
 * The GRPO learner of a {@link TinyLm}: holds the current weights, the frozen reference weights and the
 * AdamW state, and takes one optimizer step on the {@link GrpoLoss} of a batch per {@link #train} call
 * (one policy update per batch, as in GRPO with a single inner iteration). Advantages are
 * {@link Advantages#groupRelative} of the batch's rewards.
 *
 * <p><b>Batch layout:</b> a batch is {@code k * groupSize} trajectories in which each consecutive run of
 * {@code groupSize} is one group, the completions of one prompt (checked: they must share the prompt
 * tokens). {@code requestId} and {@code groupIndex} are not interpreted.
 *
 * <p>Methods are synchronized. Weights handed out are never mutated afterwards; each step publishes a new
 * {@link ModelWeights} with version + 1.
 */
public final class GrpoTrainer {
  private final GrpoConfig config;
  private final ModelWeights reference;
  private final AdamW optimizer;
  private final float[] params;
  private ModelWeights current;

  /** A trainer starting from {@code initial}, which is also the frozen reference policy. */
  public GrpoTrainer(ModelWeights initial, GrpoConfig config) {
    this(initial, initial, config);
  }

  /** A trainer starting from {@code initial} with a separate frozen {@code reference} of the same spec. */
  public GrpoTrainer(ModelWeights initial, ModelWeights reference, GrpoConfig config) {
    this.current = Objects.requireNonNull(initial, "initial");
    this.reference = Objects.requireNonNull(reference, "reference");
    this.config = Objects.requireNonNull(config, "config");
    if (!initial.spec().equals(reference.spec())) {
      throw new IllegalArgumentException("reference: spec " + reference.spec() + " differs from " + initial.spec());
    }
    this.params = initial.params().clone();
    this.optimizer = AdamW.builder()
        .learningRate(config.learningRate())
        .betas(0.9, 0.99)
        .eps(1e-8)
        .weightDecay(config.weightDecay())
        .maxGradNorm(config.maxGradNorm())
        .build(params.length);
  }

  /** The current policy weights. */
  public synchronized ModelWeights weights() {
    return current;
  }

  /** The current weights and the optimizer's state: all a checkpoint needs to continue bit for bit. */
  public synchronized TrainerState state() {
    return new TrainerState(current, optimizer.state());
  }

  /**
   * Continues from {@code state}: its weights become the current ones and its optimizer state the
   * optimizer's. The reference policy stays the one this trainer was built with (the run's initial weights).
   *
   * @throws IllegalArgumentException when the state's model spec is not this trainer's
   */
  public synchronized void restore(TrainerState state) {
    if (!state.weights().spec().equals(current.spec())) {
      throw new IllegalArgumentException("state: spec " + state.weights().spec() + " differs from " + current.spec());
    }
    optimizer.restore(state.optimizer());
    System.arraycopy(state.weights().params(), 0, params, 0, params.length);
    current = state.weights();
  }

  /** The frozen reference weights. */
  public ModelWeights reference() {
    return reference;
  }

  public GrpoConfig config() {
    return config;
  }

  /** Optimizer steps taken. */
  public synchronized long steps() {
    return optimizer.steps();
  }

  /**
   * Per-token log-probs of every completion of {@code batch} under the current policy and the reference
   * policy (the "policy and reference log-probs" phase of a step).
   */
  public synchronized LogProbs logprobs(List<Trajectory> batch) {
    Objects.requireNonNull(batch, "batch");
    TinyLm policy = TinyLm.of(current);
    TinyLm ref = TinyLm.of(reference);
    float[][] pol = new float[batch.size()][];
    float[][] refs = new float[batch.size()][];
    for (int i = 0; i < batch.size(); i++) {
      Trajectory tr = Objects.requireNonNull(batch.get(i), "batch[" + i + "]");
      pol[i] = completionLogProbs(policy, tr);
      refs[i] = completionLogProbs(ref, tr);
    }
    return new LogProbs(current.version(), reference.version(), pol, refs);
  }

  /**
   * One GRPO step on {@code batch}, computing the reference log-probs itself; with {@code klBeta} 0 there is
   * no KL term and no reference pass (its metrics then report a KL of 0).
   */
  public synchronized TrainStep train(List<Trajectory> batch) {
    checkBatch(batch);
    if (config.klBeta() == 0) {
      return step(batch, null); // no KL term, no reference pass
    }
    float[][] refs = new float[batch.size()][];
    TinyLm ref = TinyLm.of(reference);
    for (int i = 0; i < batch.size(); i++) {
      refs[i] = completionLogProbs(ref, batch.get(i));
    }
    return step(batch, refs);
  }

  /**
   * One GRPO step on {@code batch}, taking the reference log-probs from {@code precomputed} (from
   * {@link #logprobs} of the same batch); the policy log-probs are recomputed, since the step needs their
   * gradient.
   */
  public synchronized TrainStep train(List<Trajectory> batch, LogProbs precomputed) {
    checkBatch(batch);
    Objects.requireNonNull(precomputed, "precomputed");
    if (precomputed.size() != batch.size()) {
      throw new IllegalArgumentException(
          "precomputed: " + precomputed.size() + " sequences for a batch of " + batch.size());
    }
    if (precomputed.referenceVersion() != reference.version()) {
      throw new IllegalArgumentException("precomputed: reference version " + precomputed.referenceVersion()
          + " is not this trainer's reference version " + reference.version());
    }
    float[][] refs = new float[batch.size()][];
    for (int i = 0; i < batch.size(); i++) {
      if (precomputed.length(i) != batch.get(i).completionLength()) {
        throw new IllegalArgumentException("precomputed: sequence " + i + " has " + precomputed.length(i)
            + " log-probs for " + batch.get(i).completionLength() + " completion tokens");
      }
      refs[i] = precomputed.reference(i);
    }
    return step(batch, refs);
  }

  private TrainStep step(List<Trajectory> batch, float[][] refLogProbs) {
    int n = batch.size();
    LossSettings s = config.lossSettings();
    double[] rewards = new double[n];
    double[][] behaviour = new double[n][];
    int[] lengths = new int[n];
    for (int i = 0; i < n; i++) {
      Trajectory tr = batch.get(i);
      rewards[i] = tr.reward();
      behaviour[i] = doubles(tr.logprobs());
      lengths[i] = tr.completionLength();
    }
    double[][] reference = refLogProbs == null ? null : doubles(refLogProbs);
    GrpoLoss.Advantaged adv = GrpoLoss.advantages(rewards, config.groupSize(), behaviour, reference, s);
    double[] scales = GrpoLoss.scales(lengths, adv.kept(), s, config.microBatchSize());
    float[][] old = null;
    if (s.truncatedImportanceSampling()) {
      TinyLm start = TinyLm.of(current);
      old = new float[n][];
      for (int i = 0; i < n; i++) {
        old[i] = completionLogProbs(start, batch.get(i));
      }
    }
    boolean update = adv.keptCount() > 0;
    int mb = config.microBatchSize() > 0 ? config.microBatchSize() : n;
    double lr = config.learningRateAt(optimizer.steps());
    GrpoLoss.Measures measures = GrpoLoss.Measures.NONE;
    double loss = 0;
    double gradNorm = 0;
    for (int epoch = 0; epoch < config.ppoEpochs(); epoch++) {
      TinyLm policy = TinyLm.of(ModelWeights.of(current.spec(), current.version(), params.clone()));
      float[] grad = null;
      for (int from = 0; from < n; from += mb) {
        int to = Math.min(n, from + mb);
        GrpoLoss.Result r = GrpoLoss.compute(policy, batch.subList(from, to),
            java.util.Arrays.copyOfRange(adv.advantages(), from, to), java.util.Arrays.copyOfRange(scales, from, to),
            reference == null ? null : java.util.Arrays.copyOfRange(refLogProbs, from, to),
            old == null ? null : java.util.Arrays.copyOfRange(old, from, to), config);
        grad = grad == null ? r.gradient() : add(grad, r.gradient());
        loss += r.loss();
        measures = measures.plus(r.measures());
      }
      if (!update) {
        break; // no sequence in the update: no optimizer step (the weights are published again, unchanged)
      }
      gradNorm += optimizer.step(params, grad, config.learningRateAt(optimizer.steps()));
    }
    int epochs = update ? config.ppoEpochs() : 0;
    current = ModelWeights.of(current.spec(), current.version() + 1, params.clone());
    int passes = Math.max(1, epochs);
    TrainMetrics metrics = new TrainMetrics(current.version(), loss / passes, measures.kl(), measures.meanEntropy(),
        measures.clipFraction(), measures.clipLowFraction(), measures.clipHighFraction(), measures.clipDualFraction(),
        measures.meanRatio(), measures.ratioMax(), measures.truncatedFraction(), gradNorm / passes, lr,
        adv.zeroAdvantageGroups(), adv.keptCount(), epochs, mean(rewards), measures.tokens() / passes, n);
    return new TrainStep(current, metrics);
  }

  private static float[] add(float[] into, float[] g) {
    for (int i = 0; i < into.length; i++) {
      into[i] += g[i];
    }
    return into;
  }

  private static double mean(double[] x) {
    double sum = 0;
    for (double v : x) {
      sum += v;
    }
    return sum / x.length;
  }

  private static double[] doubles(float[] x) {
    double[] out = new double[x.length];
    for (int i = 0; i < x.length; i++) {
      out[i] = x[i];
    }
    return out;
  }

  private static double[][] doubles(float[][] x) {
    double[][] out = new double[x.length][];
    for (int i = 0; i < x.length; i++) {
      out[i] = doubles(x[i]);
    }
    return out;
  }

  /** k3 estimator of KL(policy || reference) for one token: {@code exp(ref - pol) - (ref - pol) - 1}. */
  static double k3(double policyLogProb, double referenceLogProb) {
    return KlEstimator.K3.value(policyLogProb, referenceLogProb);
  }

  private float[] completionLogProbs(TinyLm model, Trajectory tr) {
    int[] seq = tr.sequence();
    int promptLen = seq.length - tr.completionLength();
    float[] out = new float[tr.completionLength()];
    for (int t = 0; t < out.length; t++) {
      out[t] = Sampling.logProb(model.logits(seq, promptLen + t), seq[promptLen + t], config.temperature());
    }
    return out;
  }

  private void checkBatch(List<Trajectory> batch) {
    Objects.requireNonNull(batch, "batch");
    int g = config.groupSize();
    if (batch.isEmpty() || batch.size() % g != 0) {
      throw new IllegalArgumentException(
          "batch: size " + batch.size() + " is not a positive multiple of groupSize " + g);
    }
    for (int i = 0; i < batch.size(); i++) {
      Trajectory tr = Objects.requireNonNull(batch.get(i), "batch[" + i + "]");
      Trajectory first = batch.get(i - i % g);
      if (!tr.samePrompt(first)) {
        throw new IllegalArgumentException("batch: trajectory " + i + " does not share the prompt of trajectory "
            + (i - i % g) + "; each run of groupSize=" + g + " must be one prompt's group");
      }
    }
  }
}
