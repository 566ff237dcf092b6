package dev.ravel.workers.engine;

import java.io.Serializable;

/**
 * A finished request: the completion's token ids, the log-probability of each under the sampling
 * distribution at the request's temperature, why it ended, which weight version produced its last token,
 * its timing, and whether its {@code llm_request} span was kept. Immutable and serializable; arrays are
 * copied in and out. The engine makes them; {@link #builder()} is for other backends and tests.
 */
public final class GenerationResult implements Serializable {
  private static final long serialVersionUID = 1L;

  /** {@link #weightVersion()} of a result that produced no token. */
  public static final long NO_VERSION = -1;

  private final String requestId;
  private final int[] promptTokens;
  private final int[] completionTokens;
  private final float[] logprobs;
  private final FinishReason finishReason;
  private final long weightVersion;
  private final RequestStats stats;
  private final boolean traced;
  private final String error;
  private final java.util.List<VersionSpan> versionSpans;

  private GenerationResult(Builder b) {
    this.requestId = b.requestId;
    this.promptTokens = b.promptTokens.clone();
    this.completionTokens = b.completionTokens.clone();
    this.logprobs = b.logprobs.clone();
    this.finishReason = b.finishReason;
    this.weightVersion = b.weightVersion;
    this.stats = b.stats;
    this.traced = b.traced;
    this.error = b.error;
    this.versionSpans = b.versionSpans == null ? java.util.List.of() : java.util.List.copyOf(b.versionSpans);
  }

  public static Builder builder() {
    return new Builder();
  }

  public String requestId() {
    return requestId;
  }

  /** A copy of the prompt's token ids. */
  public int[] promptTokens() {
    return promptTokens.clone();
  }

  /** A copy of the generated token ids (the EOS token included when the request stopped on it). */
  public int[] completionTokens() {
    return completionTokens.clone();
  }

  /**
   * A copy of the log-probability of each completion token: {@code log softmax(logits / T)[token]} at the
   * request's temperature T (T = 0 counts as 1), over the whole vocabulary (before top-p truncation).
   */
  public float[] logprobs() {
    return logprobs.clone();
  }

  /** Prompt length, without a copy (the wire form sizes its buffer with it). */
  int promptTokenCount() {
    return promptTokens.length;
  }

  /** Completion length, without a copy. */
  int completionTokenCount() {
    return completionTokens.length;
  }

  /** Writes prompt, completion and log-probs as {@link ResultWire} lays them out, without copying the arrays. */
  void writeTokens(java.nio.ByteBuffer b) {
    b.putInt(promptTokens.length);
    b.asIntBuffer().put(promptTokens);
    b.position(b.position() + 4 * promptTokens.length);
    b.putInt(completionTokens.length);
    b.asIntBuffer().put(completionTokens);
    b.position(b.position() + 4 * completionTokens.length);
    b.putInt(logprobs.length);
    b.asFloatBuffer().put(logprobs);
    b.position(b.position() + 4 * logprobs.length);
  }

  public FinishReason finishReason() {
    return finishReason;
  }

  /** The version of the model that produced the last completion token; {@link #NO_VERSION} if none. */
  public long weightVersion() {
    return weightVersion;
  }

  /**
   * Which weight version sampled which completion tokens, in token order (one span unless the weights changed
   * while the request ran; empty when no token was produced, or when the backend could not say).
   */
  public java.util.List<VersionSpan> versionSpans() {
    return versionSpans;
  }

  /**
   * The oldest weight version that sampled a token of this completion (the one the policy lag of the completion
   * is counted from); {@link #weightVersion()} when the spans are unknown.
   */
  public long oldestWeightVersion() {
    long v = weightVersion;
    for (VersionSpan s : versionSpans) {
      v = Math.min(v, s.version());
    }
    return v;
  }

  public RequestStats stats() {
    return stats;
  }

  /** Whether this request's {@code llm_request} span was kept (by the engine's sampler and the SDK's). */
  public boolean traced() {
    return traced;
  }

  /** What went wrong when {@link #finishReason()} is {@link FinishReason#ERROR}; otherwise null. */
  public String error() {
    return error;
  }

  /** Whether the engine finished the request normally (not {@code error}, not {@code abort}). */
  public boolean succeeded() {
    return finishReason != FinishReason.ERROR && finishReason != FinishReason.ABORT;
  }

  /**
   * This result, if it {@linkplain #succeeded() succeeded}.
   *
   * @throws IllegalStateException naming the request, how it ended and the engine's reason, otherwise
   */
  public GenerationResult requireSucceeded() {
    if (!succeeded()) {
      throw new IllegalStateException("generation of " + requestId + " ended " + finishReason.wireName()
          + (error == null ? "" : ": " + error));
    }
    return this;
  }

  @Override
  public String toString() {
    return "GenerationResult{" + requestId + ", " + finishReason.wireName() + ", completionTokens="
        + completionTokens.length + ", weightVersion=" + weightVersion + (traced ? ", traced" : "")
        + (error == null ? "" : ", error=" + error) + "}";
  }

  /** Builds {@link GenerationResult}; {@link #build()} rejects missing or inconsistent fields, naming them. */
  public static final class Builder {
    private String requestId;
    private int[] promptTokens;
    private int[] completionTokens = new int[0];
    private float[] logprobs = new float[0];
    private FinishReason finishReason;
    private long weightVersion = NO_VERSION;
    private RequestStats stats;
    private boolean traced;
    private String error;
    private java.util.List<VersionSpan> versionSpans;

    private Builder() {}

    /** Which version sampled which tokens ({@link GenerationResult#versionSpans()}). */
    public Builder versionSpans(java.util.List<VersionSpan> v) {
      this.versionSpans = v;
      return this;
    }

    public Builder requestId(String v) {
      this.requestId = v;
      return this;
    }

    public Builder promptTokens(int[] v) {
      this.promptTokens = v;
      return this;
    }

    public Builder completionTokens(int[] v) {
      this.completionTokens = v;
      return this;
    }

    public Builder logprobs(float[] v) {
      this.logprobs = v;
      return this;
    }

    public Builder finishReason(FinishReason v) {
      this.finishReason = v;
      return this;
    }

    public Builder weightVersion(long v) {
      this.weightVersion = v;
      return this;
    }

    public Builder stats(RequestStats v) {
      this.stats = v;
      return this;
    }

    public Builder traced(boolean v) {
      this.traced = v;
      return this;
    }

    public Builder error(String v) {
      this.error = v;
      return this;
    }

    /** @throws IllegalArgumentException naming the first missing or inconsistent field */
    public GenerationResult build() {
      if (requestId == null || requestId.isBlank()) {
        throw new IllegalArgumentException("requestId: must not be blank");
      }
      if (promptTokens == null) {
        throw new IllegalArgumentException("promptTokens: required");
      }
      if (completionTokens == null) {
        throw new IllegalArgumentException("completionTokens: required");
      }
      if (logprobs == null || logprobs.length != completionTokens.length) {
        throw new IllegalArgumentException("logprobs: need one per completion token ("
            + completionTokens.length + "), got " + (logprobs == null ? "none" : logprobs.length));
      }
      if (finishReason == null) {
        throw new IllegalArgumentException("finishReason: required");
      }
      if (stats == null) {
        throw new IllegalArgumentException("stats: required");
      }
      if (finishReason == FinishReason.ERROR && (error == null || error.isBlank())) {
        throw new IllegalArgumentException("error: a message is required when finishReason is ERROR");
      }
      if (finishReason != FinishReason.ERROR && error != null) {
        throw new IllegalArgumentException("error: only an ERROR result carries a message (finishReason is "
            + finishReason + ")");
      }
      return new GenerationResult(this);
    }
  }
}
