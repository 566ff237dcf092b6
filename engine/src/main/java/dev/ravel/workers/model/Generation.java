package dev.ravel.workers.model;

import java.util.Arrays;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Reference autoregressive sampling of one sequence: prefill the prompt, then decode one token at a time
 * until EOS or a token budget. What an inference engine does, without batching; useful in-process and as
 * an oracle for an engine's output.
 */
public final class Generation {
  private Generation() {}

  /**
   * A sampled completion: its tokens (including the EOS token when one was sampled), the behaviour
   * log-prob of each token ({@link Sampling#logProb} at the sampling temperature) and whether it ended on
   * EOS rather than on the token budget.
   */
  public record Completion(int[] tokens, float[] logprobs, boolean stopped) {
    public Completion {
      Objects.requireNonNull(tokens, "tokens");
      Objects.requireNonNull(logprobs, "logprobs");
      if (tokens.length != logprobs.length) {
        throw new IllegalArgumentException(
            "logprobs: length " + logprobs.length + " differs from tokens length " + tokens.length);
      }
      tokens = tokens.clone();
      logprobs = logprobs.clone();
    }

    /** A copy of the tokens. */
    @Override
    public int[] tokens() {
      return tokens.clone();
    }

    /** A copy of the log-probs. */
    @Override
    public float[] logprobs() {
      return logprobs.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Completion c && c.stopped == stopped && Arrays.equals(c.tokens, tokens)
          && Arrays.equals(c.logprobs, logprobs);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(tokens) * 31 + Arrays.hashCode(logprobs) + (stopped ? 1 : 0);
    }

    @Override
    public String toString() {
      return "Completion{tokens=" + Arrays.toString(tokens) + ", logprobs=" + Arrays.toString(logprobs)
          + ", stopped=" + stopped + "}";
    }
  }

  /**
   * Samples up to {@code maxNewTokens} tokens after {@code prompt} (non-empty) with
   * {@link Sampling#sample}, stopping after {@code eos}.
   */
  public static Completion sample(LanguageModel model, int[] prompt, int eos, int maxNewTokens,
      double temperature, double topP, RandomGenerator rng) {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(prompt, "prompt");
    if (prompt.length == 0) {
      throw new IllegalArgumentException("prompt must not be empty");
    }
    if (maxNewTokens < 1) {
      throw new IllegalArgumentException("maxNewTokens must be >= 1, got " + maxNewTokens);
    }
    KvCache cache = model.newCache();
    float[] logits = new float[model.vocabSize()];
    model.forward(cache, prompt, 0, prompt.length, logits);
    int[] tokens = new int[maxNewTokens];
    float[] logprobs = new float[maxNewTokens];
    int n = 0;
    boolean stopped = false;
    while (n < maxNewTokens) {
      int next = Sampling.sample(logits, temperature, topP, rng);
      tokens[n] = next;
      logprobs[n] = Sampling.logProb(logits, next, temperature);
      n++;
      if (next == eos) {
        stopped = true;
        break;
      }
      if (n < maxNewTokens) {
        model.forward(cache, tokens, n - 1, n, logits);
      }
    }
    return new Completion(Arrays.copyOf(tokens, n), Arrays.copyOf(logprobs, n), stopped);
  }
}
