package dev.ravel.workers.model;

/** Maps text to token ids and back over a fixed vocabulary. Immutable. */
public interface Tokenizer {
  int vocabSize();

  /** The end-of-sequence token: generation stops when it is sampled. */
  int eos();

  /** Encodes {@code text}; a character outside the vocabulary is an {@link IllegalArgumentException} naming it. */
  int[] encode(String text);

  /** Decodes {@code tokens[from, to)}; the EOS token decodes to nothing. */
  String decode(int[] tokens, int from, int to);
}
