package dev.ravel.workers.engine;

import java.io.Serializable;
import java.time.Duration;

/**
 * Settings of an {@link EmbeddedEngine}: its capacity (a KV token budget shared by all running requests,
 * and a cap on how many run at once), the model name it reports, the end-of-sequence token, and its
 * {@code llm_request} span sampling. Immutable and serializable; build one with {@link #builder()}.
 */
public final class EngineConfig implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int kvTokenBudget;
  private final int maxRunningRequests;
  private final String modelName;
  private final boolean tracing;
  private final double sampleRatio;
  private final Duration slowRequest;
  private final int eosToken;
  private final boolean parentBased;

  private EngineConfig(Builder b) {
    this.parentBased = b.parentBased;
    this.kvTokenBudget = b.kvTokenBudget;
    this.maxRunningRequests = b.maxRunningRequests;
    this.modelName = b.modelName;
    this.tracing = b.tracing;
    this.sampleRatio = b.sampleRatio;
    this.slowRequest = b.slowRequest;
    this.eosToken = b.eosToken;
  }

  /**
   * Defaults: kvTokenBudget 4096, maxRunningRequests 64, modelName {@code ravel-tiny}, tracing off,
   * sampleRatio 1.0, slowRequest 2 s. {@code eosToken} has no default and must be set.
   */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding these values, to derive a changed copy. */
  public Builder toBuilder() {
    return new Builder().kvTokenBudget(kvTokenBudget).maxRunningRequests(maxRunningRequests).modelName(modelName)
        .tracing(tracing).sampleRatio(sampleRatio).slowRequest(slowRequest).eosToken(eosToken)
        .parentBased(parentBased);
  }

  /**
   * Whether a request's {@code llm_request} span follows its caller's decision, the sampled flag of its
   * {@code traceparent} (as vLLM's tracer does: parent-based, a request without one sampled), instead of the
   * engine's own sampler (errors, preemptions, slow requests, the ratio by request id).
   */
  public boolean parentBased() {
    return parentBased;
  }

  /** Tokens (prompt plus generated) all running requests may hold together. */
  public int kvTokenBudget() {
    return kvTokenBudget;
  }

  /** Most requests in the running batch. */
  public int maxRunningRequests() {
    return maxRunningRequests;
  }

  /** Reported as {@code gen_ai.request.model} and {@code gen_ai.response.model}. */
  public String modelName() {
    return modelName;
  }

  /** Whether {@code llm_request} spans are made at all. */
  public boolean tracing() {
    return tracing;
  }

  /** Share of requests whose span the engine keeps, chosen by request id (0..1). */
  public double sampleRatio() {
    return sampleRatio;
  }

  /** Requests at least this slow end to end are always traced (when tracing is on). */
  public Duration slowRequest() {
    return slowRequest;
  }

  /** Sampling this token finishes a request with {@link FinishReason#STOP}. */
  public int eosToken() {
    return eosToken;
  }

  @Override
  public String toString() {
    return "EngineConfig{kvTokenBudget=" + kvTokenBudget + ", maxRunningRequests=" + maxRunningRequests
        + ", modelName=" + modelName + ", tracing=" + tracing + ", sampleRatio=" + sampleRatio + ", slowRequest="
        + slowRequest + ", eosToken=" + eosToken + "}";
  }

  /** Builds {@link EngineConfig}; {@link #build()} rejects invalid values naming the field. */
  public static final class Builder {
    private int kvTokenBudget = 4096;
    private int maxRunningRequests = 64;
    private String modelName = "ravel-tiny";
    private boolean tracing;
    private double sampleRatio = 1.0;
    private Duration slowRequest = Duration.ofSeconds(2);
    private Integer eosToken;
    private boolean parentBased;

    private Builder() {}

    /** Spans follow the caller's sampled flag ({@link EngineConfig#parentBased()}). */
    public Builder parentBased(boolean v) {
      this.parentBased = v;
      return this;
    }

    public Builder kvTokenBudget(int v) {
      this.kvTokenBudget = v;
      return this;
    }

    public Builder maxRunningRequests(int v) {
      this.maxRunningRequests = v;
      return this;
    }

    public Builder modelName(String v) {
      this.modelName = v;
      return this;
    }

    public Builder tracing(boolean v) {
      this.tracing = v;
      return this;
    }

    public Builder sampleRatio(double v) {
      this.sampleRatio = v;
      return this;
    }

    public Builder slowRequest(Duration v) {
      this.slowRequest = v;
      return this;
    }

    public Builder eosToken(int v) {
      this.eosToken = v;
      return this;
    }

    /** @throws IllegalArgumentException naming the first invalid or missing field */
    public EngineConfig build() {
      if (kvTokenBudget < 2) {
        throw new IllegalArgumentException("kvTokenBudget: must be at least 2 tokens (got " + kvTokenBudget + ")");
      }
      if (maxRunningRequests < 1) {
        throw new IllegalArgumentException("maxRunningRequests: must be at least 1 (got " + maxRunningRequests
            + ")");
      }
      if (modelName == null || modelName.isBlank()) {
        throw new IllegalArgumentException("modelName: must not be blank");
      }
      if (!(sampleRatio >= 0 && sampleRatio <= 1)) {
        throw new IllegalArgumentException("sampleRatio: must be in [0, 1] (got " + sampleRatio + ")");
      }
      if (slowRequest == null || slowRequest.isNegative()) {
        throw new IllegalArgumentException("slowRequest: must be a duration >= 0 (got " + slowRequest + ")");
      }
      if (eosToken == null) {
        throw new IllegalArgumentException("eosToken: required (the tokenizer's eos())");
      }
      if (eosToken < 0) {
        throw new IllegalArgumentException("eosToken: must be >= 0 (got " + eosToken + ")");
      }
      return new EngineConfig(this);
    }
  }
}
