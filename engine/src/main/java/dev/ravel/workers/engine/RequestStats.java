package dev.ravel.workers.engine;

import java.io.Serializable;

/**
 * When a request went through the engine's stages, with vLLM's latency definitions. Times are
 * nanoseconds since the Unix epoch; a stage that never happened is 0 ({@code scheduled} for a request
 * rejected or aborted while waiting, {@code firstToken} for one that produced no token).
 *
 * <ul>
 *   <li>arrival: {@code submit} was called;</li>
 *   <li>scheduled: first admitted to the running batch (re-admissions after preemption don't move it);</li>
 *   <li>firstToken: the first completion token was sampled;</li>
 *   <li>finish: the request finished (the span ends here);</li>
 *   <li>prefill nanos: scheduled to first token; decode nanos: first token to last token (so time lost to
 *       preemption and recompute counts as decode, as in vLLM).</li>
 * </ul>
 * Immutable; the engine makes them, {@link #builder()} is for other backends and tests.
 */
public final class RequestStats implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final double NANOS_PER_SECOND = 1e9;

  private final long arrivalEpochNanos;
  private final long scheduledEpochNanos;
  private final long firstTokenEpochNanos;
  private final long finishEpochNanos;
  private final long prefillNanos;
  private final long decodeNanos;
  private final int preemptions;
  private final int promptTokens;
  private final int completionTokens;

  private RequestStats(Builder b) {
    this.arrivalEpochNanos = b.arrivalEpochNanos;
    this.scheduledEpochNanos = b.scheduledEpochNanos;
    this.firstTokenEpochNanos = b.firstTokenEpochNanos;
    this.finishEpochNanos = b.finishEpochNanos;
    this.prefillNanos = b.prefillNanos;
    this.decodeNanos = b.decodeNanos;
    this.preemptions = b.preemptions;
    this.promptTokens = b.promptTokens;
    this.completionTokens = b.completionTokens;
  }

  public static Builder builder() {
    return new Builder();
  }

  public long arrivalEpochNanos() {
    return arrivalEpochNanos;
  }

  /** First admission to the running batch, 0 if never admitted. */
  public long scheduledEpochNanos() {
    return scheduledEpochNanos;
  }

  /** First completion token, 0 if none was produced. */
  public long firstTokenEpochNanos() {
    return firstTokenEpochNanos;
  }

  public long finishEpochNanos() {
    return finishEpochNanos;
  }

  public long prefillNanos() {
    return prefillNanos;
  }

  public long decodeNanos() {
    return decodeNanos;
  }

  /** Times the request was evicted from the running batch and later recomputed. */
  public int preemptions() {
    return preemptions;
  }

  public int promptTokens() {
    return promptTokens;
  }

  public int completionTokens() {
    return completionTokens;
  }

  /** Arrival to first admission, seconds (arrival to finish if never admitted). */
  public double timeInQueue() {
    long until = scheduledEpochNanos == 0 ? finishEpochNanos : scheduledEpochNanos;
    return seconds(until - arrivalEpochNanos);
  }

  /** Arrival to first token, seconds; 0 when no token was produced. */
  public double timeToFirstToken() {
    return firstTokenEpochNanos == 0 ? 0.0 : seconds(firstTokenEpochNanos - arrivalEpochNanos);
  }

  /** Arrival to finish, seconds. */
  public double e2e() {
    return seconds(finishEpochNanos - arrivalEpochNanos);
  }

  /** {@link #prefillNanos()} in seconds. */
  public double prefill() {
    return seconds(prefillNanos);
  }

  /** {@link #decodeNanos()} in seconds. */
  public double decode() {
    return seconds(decodeNanos);
  }

  /** Prefill plus decode, seconds. */
  public double inference() {
    return seconds(prefillNanos + decodeNanos);
  }

  private static double seconds(long nanos) {
    return nanos / NANOS_PER_SECOND;
  }

  @Override
  public String toString() {
    return "RequestStats{queue=" + timeInQueue() + "s, ttft=" + timeToFirstToken() + "s, e2e=" + e2e()
        + "s, prefill=" + prefill() + "s, decode=" + decode() + "s, preemptions=" + preemptions + ", prompt="
        + promptTokens + ", completion=" + completionTokens + "}";
  }

  /** Builds {@link RequestStats}; {@link #build()} checks that the times are in order, naming the field. */
  public static final class Builder {
    private long arrivalEpochNanos;
    private long scheduledEpochNanos;
    private long firstTokenEpochNanos;
    private long finishEpochNanos;
    private long prefillNanos;
    private long decodeNanos;
    private int preemptions;
    private int promptTokens;
    private int completionTokens;

    private Builder() {}

    public Builder arrivalEpochNanos(long v) {
      this.arrivalEpochNanos = v;
      return this;
    }

    public Builder scheduledEpochNanos(long v) {
      this.scheduledEpochNanos = v;
      return this;
    }

    public Builder firstTokenEpochNanos(long v) {
      this.firstTokenEpochNanos = v;
      return this;
    }

    public Builder finishEpochNanos(long v) {
      this.finishEpochNanos = v;
      return this;
    }

    public Builder prefillNanos(long v) {
      this.prefillNanos = v;
      return this;
    }

    public Builder decodeNanos(long v) {
      this.decodeNanos = v;
      return this;
    }

    public Builder preemptions(int v) {
      this.preemptions = v;
      return this;
    }

    public Builder promptTokens(int v) {
      this.promptTokens = v;
      return this;
    }

    public Builder completionTokens(int v) {
      this.completionTokens = v;
      return this;
    }

    /** @throws IllegalArgumentException naming the first field that is negative or out of order */
    public RequestStats build() {
      if (arrivalEpochNanos <= 0) {
        throw new IllegalArgumentException("arrivalEpochNanos: must be > 0 (got " + arrivalEpochNanos + ")");
      }
      if (finishEpochNanos < arrivalEpochNanos) {
        throw new IllegalArgumentException("finishEpochNanos: " + finishEpochNanos + " is before arrival "
            + arrivalEpochNanos);
      }
      if (scheduledEpochNanos != 0
          && (scheduledEpochNanos < arrivalEpochNanos || scheduledEpochNanos > finishEpochNanos)) {
        throw new IllegalArgumentException("scheduledEpochNanos: " + scheduledEpochNanos
            + " is not between arrival " + arrivalEpochNanos + " and finish " + finishEpochNanos);
      }
      if (firstTokenEpochNanos != 0
          && (firstTokenEpochNanos < arrivalEpochNanos || firstTokenEpochNanos > finishEpochNanos)) {
        throw new IllegalArgumentException("firstTokenEpochNanos: " + firstTokenEpochNanos
            + " is not between arrival " + arrivalEpochNanos + " and finish " + finishEpochNanos);
      }
      nonNegative("prefillNanos", prefillNanos);
      nonNegative("decodeNanos", decodeNanos);
      nonNegative("preemptions", preemptions);
      nonNegative("promptTokens", promptTokens);
      nonNegative("completionTokens", completionTokens);
      return new RequestStats(this);
    }

    private static void nonNegative(String field, long v) {
      if (v < 0) {
        throw new IllegalArgumentException(field + ": must be >= 0 (got " + v + ")");
      }
    }
  }
}
