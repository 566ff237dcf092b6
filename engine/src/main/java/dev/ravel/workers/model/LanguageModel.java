package dev.ravel.workers.model;

/**
 * What an inference engine needs from an autoregressive model: a per-sequence cache and a forward pass
 * that feeds tokens into it (many at once for prefill, one for a decode step) and yields the logits of
 * the next token. Implementations are immutable and safe to share between threads; caches are not.
 */
public interface LanguageModel {
  /** Number of tokens in the vocabulary (the length of a logits vector). */
  int vocabSize();

  /** The weight version these parameters belong to. */
  long version();

  /** A new, empty cache for one sequence. */
  KvCache newCache();

  /**
   * Appends {@code tokens[from, to)} to {@code cache} and writes the logits of the token that follows them
   * into {@code logits} (length {@link #vocabSize()}). {@code to > from}.
   */
  void forward(KvCache cache, int[] tokens, int from, int to, float[] logits);
}
