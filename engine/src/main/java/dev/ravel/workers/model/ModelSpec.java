package dev.ravel.workers.model;

import java.io.ObjectStreamException;
import java.io.Serializable;

/**
 * The shape of a {@link TinyLm}: a neural n-gram language model that embeds the last
 * {@link #contextTokens()} tokens, concatenates the embeddings, applies one tanh hidden layer and projects
 * to logits over the vocabulary. Immutable; build one with {@link #builder()} (every invalid value is an
 * {@link IllegalArgumentException} naming the field) or take the {@link #tiny(int)} default.
 *
 * <p>Parameter layout of the flat vector ({@link ModelWeights#params()}), in this order:
 * <ol>
 *   <li>embedding: {@code (vocabSize + 1) x embedDim}; row {@code vocabSize} is the learned PAD row used for
 *       positions before the start of the sequence;</li>
 *   <li>hidden weight {@code W1}: {@code hiddenDim x (contextTokens * embedDim)}, row-major;</li>
 *   <li>hidden bias {@code b1}: {@code hiddenDim};</li>
 *   <li>output weight {@code W2}: {@code vocabSize x hiddenDim}, row-major;</li>
 *   <li>output bias {@code b2}: {@code vocabSize}.</li>
 * </ol>
 */
public final class ModelSpec implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int vocabSize;
  private final int contextTokens;
  private final int embedDim;
  private final int hiddenDim;

  private ModelSpec(Builder b) {
    this.vocabSize = b.vocabSize;
    this.contextTokens = b.contextTokens;
    this.embedDim = b.embedDim;
    this.hiddenDim = b.hiddenDim;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * The default used for {@code ArithmeticTask}: 4 tokens of context (enough to see a whole
   * {@code "a+b="} prompt), 16-dimensional embeddings and 64 hidden units.
   */
  public static ModelSpec tiny(int vocabSize) {
    return builder().vocabSize(vocabSize).contextTokens(4).embedDim(16).hiddenDim(64).build();
  }

  /** A builder holding this spec's values, to derive a changed copy. */
  public Builder toBuilder() {
    return builder().vocabSize(vocabSize).contextTokens(contextTokens).embedDim(embedDim).hiddenDim(hiddenDim);
  }

  /** Number of token ids the model reads and predicts. */
  public int vocabSize() {
    return vocabSize;
  }

  /** How many previous tokens the model sees when it predicts the next one. */
  public int contextTokens() {
    return contextTokens;
  }

  /** Width of a token embedding. */
  public int embedDim() {
    return embedDim;
  }

  /** Number of hidden (tanh) units. */
  public int hiddenDim() {
    return hiddenDim;
  }

  /** Length of the flat parameter vector. */
  public int parameterCount() {
    return (int) count(vocabSize, contextTokens, embedDim, hiddenDim);
  }

  int inputDim() {
    return contextTokens * embedDim;
  }

  int embeddingOffset() {
    return 0;
  }

  int w1Offset() {
    return (vocabSize + 1) * embedDim;
  }

  int b1Offset() {
    return w1Offset() + hiddenDim * inputDim();
  }

  int w2Offset() {
    return b1Offset() + hiddenDim;
  }

  int b2Offset() {
    return w2Offset() + vocabSize * hiddenDim;
  }

  private static long count(long v, long c, long e, long h) {
    return (v + 1) * e + h * c * e + h + v * h + v;
  }

  private Object readResolve() throws ObjectStreamException {
    return toBuilder().build();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ModelSpec s
        && s.vocabSize == vocabSize
        && s.contextTokens == contextTokens
        && s.embedDim == embedDim
        && s.hiddenDim == hiddenDim;
  }

  @Override
  public int hashCode() {
    return ((vocabSize * 31 + contextTokens) * 31 + embedDim) * 31 + hiddenDim;
  }

  @Override
  public String toString() {
    return "ModelSpec{vocabSize=" + vocabSize + ", contextTokens=" + contextTokens + ", embedDim=" + embedDim
        + ", hiddenDim=" + hiddenDim + ", parameterCount=" + parameterCount() + "}";
  }

  /** Collects the values of a {@link ModelSpec}; {@link #build()} validates them. */
  public static final class Builder {
    private int vocabSize;
    private int contextTokens = 4;
    private int embedDim = 16;
    private int hiddenDim = 64;

    private Builder() {}

    public Builder vocabSize(int v) {
      this.vocabSize = v;
      return this;
    }

    public Builder contextTokens(int v) {
      this.contextTokens = v;
      return this;
    }

    public Builder embedDim(int v) {
      this.embedDim = v;
      return this;
    }

    public Builder hiddenDim(int v) {
      this.hiddenDim = v;
      return this;
    }

    /** The spec; an invalid value is an {@link IllegalArgumentException} naming its field. */
    public ModelSpec build() {
      atLeast("vocabSize", vocabSize, 2);
      atLeast("contextTokens", contextTokens, 1);
      atLeast("embedDim", embedDim, 1);
      atLeast("hiddenDim", hiddenDim, 1);
      long n = count(vocabSize, contextTokens, embedDim, hiddenDim);
      if (n > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException("parameterCount: " + n + " parameters do not fit in one array");
      }
      return new ModelSpec(this);
    }

    private static void atLeast(String field, int value, int min) {
      if (value < min) {
        throw new IllegalArgumentException(field + " must be >= " + min + ", got " + value);
      }
    }
  }
}
