package dev.ravel.workers.model;

import java.util.Arrays;
import java.util.Objects;

/**
 * A tiny autoregressive neural language model (a neural n-gram model, Bengio et al. 2003): to predict the
 * token after position {@code t} it looks up the embeddings of tokens {@code t-C+1 .. t} (a learned PAD
 * embedding stands in before the start of the sequence), concatenates them into {@code x}, and computes
 * <pre>
 *   h = tanh(W1 x + b1)
 *   logits = W2 h + b2
 * </pre>
 * with {@code C = spec.contextTokens()} and the parameter layout of {@link ModelSpec}.
 *
 * <p>Inference goes through {@link #forward}: a {@link KvCache} from {@link #newCache()} keeps, per token,
 * its id and embedding, so a prefill appends many tokens and a decode step appends one. Training uses
 * {@link #trace(int[], int)}, which keeps the activations of one prediction so that
 * {@link Trace#backward(float[], float[])} can accumulate {@code dLoss/dParams}.
 *
 * <p>Immutable and safe for concurrent use; caches are not (one per sequence, one thread at a time).
 */
public final class TinyLm implements LanguageModel {
  private final ModelWeights weights;
  private final ModelSpec spec;
  private final float[] p;

  private TinyLm(ModelWeights weights) {
    this.weights = weights;
    this.spec = weights.spec();
    this.p = weights.params();
  }

  /** The model with these weights (shared, not copied). */
  public static TinyLm of(ModelWeights weights) {
    return new TinyLm(Objects.requireNonNull(weights, "weights"));
  }

  public ModelWeights weights() {
    return weights;
  }

  public ModelSpec spec() {
    return spec;
  }

  @Override
  public int vocabSize() {
    return spec.vocabSize();
  }

  @Override
  public long version() {
    return weights.version();
  }

  @Override
  public KvCache newCache() {
    return new Cache(this, spec.embedDim());
  }

  /**
   * {@inheritDoc}
   *
   * <p>The cache must come from a {@link TinyLm}. A cache filled by another {@code TinyLm} (other weights,
   * e.g. before a weight update) is re-embedded under these weights first, so the result is always what
   * these weights give for the whole sequence.
   */
  @Override
  public void forward(KvCache cache, int[] tokens, int from, int to, float[] logits) {
    if (!(cache instanceof Cache c)) {
      throw new IllegalArgumentException("cache: not a TinyLm cache: " + (cache == null ? null : cache.getClass()));
    }
    Objects.requireNonNull(tokens, "tokens");
    if (from < 0 || to > tokens.length || to <= from) {
      throw new IllegalArgumentException(
          "tokens: range [" + from + ", " + to + ") is empty or outside an array of " + tokens.length);
    }
    checkLogits(logits);
    for (int i = from; i < to; i++) {
      checkToken(tokens, i);
    }
    if (c.owner != this && c.owner.p != p) {
      c.reembed(this);
    }
    c.owner = this;
    for (int i = from; i < to; i++) {
      c.append(tokens[i], p, embeddingRow(tokens[i]));
    }
    int ctx = spec.contextTokens();
    int e = spec.embedDim();
    float[] x = new float[spec.inputDim()];
    for (int k = 0; k < ctx; k++) {
      int pos = c.length - ctx + k;
      if (pos >= 0) {
        System.arraycopy(c.embeddings, pos * e, x, k * e, e);
      } else {
        System.arraycopy(p, embeddingRow(spec.vocabSize()), x, k * e, e);
      }
    }
    float[] h = new float[spec.hiddenDim()];
    hidden(x, h);
    output(h, logits);
  }

  /**
   * The logits of the token that follows {@code tokens[0, len)}: the same as {@link #forward} of those
   * tokens into a fresh cache ({@code len = 0} gives the prediction from PAD context alone).
   */
  public float[] logits(int[] tokens, int len) {
    return trace(tokens, len).logits;
  }

  /**
   * The prediction for the token that follows {@code tokens[0, len)}, with the activations kept for a
   * backward pass.
   */
  public Trace trace(int[] tokens, int len) {
    Objects.requireNonNull(tokens, "tokens");
    if (len < 0 || len > tokens.length) {
      throw new IllegalArgumentException("len must be in [0, " + tokens.length + "], got " + len);
    }
    int ctx = spec.contextTokens();
    int e = spec.embedDim();
    int[] rows = new int[ctx];
    float[] x = new float[spec.inputDim()];
    for (int k = 0; k < ctx; k++) {
      int pos = len - ctx + k;
      int id = pos >= 0 ? checkToken(tokens, pos) : spec.vocabSize();
      rows[k] = id;
      System.arraycopy(p, embeddingRow(id), x, k * e, e);
    }
    float[] h = new float[spec.hiddenDim()];
    hidden(x, h);
    float[] logits = new float[spec.vocabSize()];
    output(h, logits);
    return new Trace(this, rows, x, h, logits);
  }

  /** A zeroed gradient vector for {@link Trace#backward(float[], float[])}. */
  public float[] newGradient() {
    return new float[spec.parameterCount()];
  }

  private void hidden(float[] x, float[] h) {
    int in = x.length;
    int w1 = spec.w1Offset();
    int b1 = spec.b1Offset();
    for (int j = 0; j < h.length; j++) {
      double s = p[b1 + j];
      int row = w1 + j * in;
      for (int i = 0; i < in; i++) {
        s += p[row + i] * x[i];
      }
      h[j] = (float) Math.tanh(s);
    }
  }

  private void output(float[] h, float[] logits) {
    int hd = h.length;
    int w2 = spec.w2Offset();
    int b2 = spec.b2Offset();
    for (int v = 0; v < logits.length; v++) {
      double s = p[b2 + v];
      int row = w2 + v * hd;
      for (int j = 0; j < hd; j++) {
        s += p[row + j] * h[j];
      }
      logits[v] = (float) s;
    }
  }

  private int embeddingRow(int id) {
    return spec.embeddingOffset() + id * spec.embedDim();
  }

  private int checkToken(int[] tokens, int i) {
    int id = tokens[i];
    if (id < 0 || id >= spec.vocabSize()) {
      throw new IllegalArgumentException(
          "tokens[" + i + "] = " + id + " is outside the vocabulary [0, " + spec.vocabSize() + ")");
    }
    return id;
  }

  private void checkLogits(float[] logits) {
    Objects.requireNonNull(logits, "logits");
    if (logits.length != spec.vocabSize()) {
      throw new IllegalArgumentException(
          "logits: length " + logits.length + " is not the vocabulary size " + spec.vocabSize());
    }
  }

  @Override
  public String toString() {
    return "TinyLm{version=" + version() + ", " + spec + "}";
  }

  /**
   * One prediction of a {@link TinyLm} with its activations: {@link #logits()} and a backward pass. Not
   * shared between threads; the model's parameters are only read.
   */
  public static final class Trace {
    private final TinyLm model;
    private final int[] rows;
    private final float[] x;
    private final float[] h;
    private final float[] logits;

    private Trace(TinyLm model, int[] rows, float[] x, float[] h, float[] logits) {
      this.model = model;
      this.rows = rows;
      this.x = x;
      this.h = h;
      this.logits = logits;
    }

    /** The next-token logits (this trace's own array). */
    public float[] logits() {
      return logits;
    }

    /**
     * Accumulates into {@code grad} (length {@link ModelSpec#parameterCount()}) the gradient of a loss
     * with respect to every parameter, given {@code dLogits} = dLoss/dLogits of this prediction.
     */
    public void backward(float[] dLogits, float[] grad) {
      ModelSpec s = model.spec;
      float[] p = model.p;
      Objects.requireNonNull(dLogits, "dLogits");
      Objects.requireNonNull(grad, "grad");
      if (dLogits.length != s.vocabSize()) {
        throw new IllegalArgumentException("dLogits: length " + dLogits.length + " is not " + s.vocabSize());
      }
      if (grad.length != s.parameterCount()) {
        throw new IllegalArgumentException("grad: length " + grad.length + " is not " + s.parameterCount());
      }
      int hd = h.length;
      int in = x.length;
      // output layer: logits = W2 h + b2
      int w2 = s.w2Offset();
      int b2 = s.b2Offset();
      double[] dh = new double[hd];
      for (int v = 0; v < dLogits.length; v++) {
        float g = dLogits[v];
        if (g == 0f) {
          continue;
        }
        grad[b2 + v] += g;
        int row = w2 + v * hd;
        for (int j = 0; j < hd; j++) {
          grad[row + j] += g * h[j];
          dh[j] += g * p[row + j];
        }
      }
      // hidden layer: h = tanh(W1 x + b1), dpre = dh * (1 - h^2)
      int w1 = s.w1Offset();
      int b1 = s.b1Offset();
      double[] dx = new double[in];
      for (int j = 0; j < hd; j++) {
        float da = (float) (dh[j] * (1.0 - (double) h[j] * h[j]));
        if (da == 0f) {
          continue;
        }
        grad[b1 + j] += da;
        int row = w1 + j * in;
        for (int i = 0; i < in; i++) {
          grad[row + i] += da * x[i];
          dx[i] += da * p[row + i];
        }
      }
      // embeddings: x is the concatenation of the rows' embeddings
      int e = s.embedDim();
      for (int k = 0; k < rows.length; k++) {
        int off = model.embeddingRow(rows[k]);
        for (int d = 0; d < e; d++) {
          grad[off + d] += (float) dx[k * e + d];
        }
      }
    }
  }

  /** Per-token state of one sequence: the token ids and their embeddings under the owning weights. */
  private static final class Cache implements KvCache {
    private TinyLm owner;
    private final int embedDim;
    private int[] ids = new int[16];
    private float[] embeddings;
    private int length;

    Cache(TinyLm owner, int embedDim) {
      this.owner = owner;
      this.embedDim = embedDim;
      this.embeddings = new float[16 * embedDim];
    }

    @Override
    public int length() {
      return length;
    }

    void append(int id, float[] params, int row) {
      if (length == ids.length) {
        ids = Arrays.copyOf(ids, length * 2);
        embeddings = Arrays.copyOf(embeddings, length * 2 * embedDim);
      }
      ids[length] = id;
      System.arraycopy(params, row, embeddings, length * embedDim, embedDim);
      length++;
    }

    void reembed(TinyLm model) {
      if (model.spec.embedDim() != embedDim || model.spec.vocabSize() != owner.spec.vocabSize()) {
        throw new IllegalArgumentException("cache: filled by a model of another shape: " + owner.spec);
      }
      for (int i = 0; i < length; i++) {
        System.arraycopy(model.p, model.embeddingRow(ids[i]), embeddings, i * embedDim, embedDim);
      }
    }

    @Override
    public String toString() {
      return "TinyLm.Cache{length=" + length + "}";
    }
  }
}
