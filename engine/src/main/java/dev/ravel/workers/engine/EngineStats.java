package dev.ravel.workers.engine;

import java.io.Serializable;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

/**
 * A snapshot of an {@link EmbeddedEngine}'s counters (totals since it started) and gauges (now). Each
 * value is exact; values are read one after another, so a snapshot taken while requests run need not be
 * one instant across fields. Immutable and serializable.
 */
public final class EngineStats implements Serializable {
  private static final long serialVersionUID = 1L;

  private final long[] finished;
  private final long preemptions;
  private final int running;
  private final int waiting;
  private final int kvTokensUsed;
  private final int kvTokenBudget;
  private final long promptTokens;
  private final long generationTokens;
  private final long spansKept;
  private final long spansSampledOut;
  private final long queueNanos;
  private final long queueCount;
  private final double loadSeconds;
  private final double runningSeconds;
  private final double waitingSeconds;
  private final double kvTokenSeconds;

  EngineStats(long[] finished, long preemptions, int running, int waiting, int kvTokensUsed, int kvTokenBudget,
      long promptTokens, long generationTokens, long spansKept, long spansSampledOut) {
    this(finished, preemptions, running, waiting, kvTokensUsed, kvTokenBudget, promptTokens, generationTokens,
        spansKept, spansSampledOut, 0, 0, new double[4]);
  }

  /** @param load {loadSeconds, runningSeconds, waitingSeconds, kvTokenSeconds} */
  EngineStats(long[] finished, long preemptions, int running, int waiting, int kvTokensUsed, int kvTokenBudget,
      long promptTokens, long generationTokens, long spansKept, long spansSampledOut, long queueNanos,
      long queueCount, double[] load) {
    this.queueNanos = queueNanos;
    this.queueCount = queueCount;
    this.loadSeconds = load[0];
    this.runningSeconds = load[1];
    this.waitingSeconds = load[2];
    this.kvTokenSeconds = load[3];
    this.finished = finished.clone();
    this.preemptions = preemptions;
    this.running = running;
    this.waiting = waiting;
    this.kvTokensUsed = kvTokensUsed;
    this.kvTokenBudget = kvTokenBudget;
    this.promptTokens = promptTokens;
    this.generationTokens = generationTokens;
    this.spansKept = spansKept;
    this.spansSampledOut = spansSampledOut;
  }

  /**
   * A builder, for engines other than {@link EmbeddedEngine} (an inference server read over HTTP); every
   * value defaults to 0.
   */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds an {@link EngineStats}; {@link #build()} rejects negative values. */
  public static final class Builder {
    private final long[] finished = new long[FinishReason.values().length];
    private long preemptions;
    private int running;
    private int waiting;
    private int kvTokensUsed;
    private int kvTokenBudget;
    private long promptTokens;
    private long generationTokens;
    private long spansKept;
    private long spansSampledOut;
    private long queueNanos;
    private long queueCount;
    private final double[] load = new double[4];

    private Builder() {}

    /** Summed arrival-to-first-scheduling time of the finished requests that were scheduled, and their count. */
    public Builder queue(long nanos, long count) {
      this.queueNanos = nanos;
      this.queueCount = count;
      return this;
    }

    /**
     * The time integrals of the load since the engine started: over {@code seconds} of the engine's life,
     * running requests times seconds, waiting requests times seconds and KV tokens held times seconds.
     */
    public Builder load(double seconds, double running, double waiting, double kvTokens) {
      load[0] = seconds;
      load[1] = running;
      load[2] = waiting;
      load[3] = kvTokens;
      return this;
    }

    public Builder finished(FinishReason reason, long count) {
      finished[reason.ordinal()] = count;
      return this;
    }

    public Builder preemptions(long preemptions) {
      this.preemptions = preemptions;
      return this;
    }

    public Builder running(int running) {
      this.running = running;
      return this;
    }

    public Builder waiting(int waiting) {
      this.waiting = waiting;
      return this;
    }

    public Builder kvTokens(int used, int budget) {
      this.kvTokensUsed = used;
      this.kvTokenBudget = budget;
      return this;
    }

    public Builder tokens(long prompt, long generation) {
      this.promptTokens = prompt;
      this.generationTokens = generation;
      return this;
    }

    public Builder spans(long kept, long sampledOut) {
      this.spansKept = kept;
      this.spansSampledOut = sampledOut;
      return this;
    }

    public EngineStats build() {
      for (FinishReason r : FinishReason.values()) {
        nonNegative("finished " + r.wireName(), finished[r.ordinal()]);
      }
      nonNegative("preemptions", preemptions);
      nonNegative("running", running);
      nonNegative("waiting", waiting);
      nonNegative("kvTokensUsed", kvTokensUsed);
      nonNegative("kvTokenBudget", kvTokenBudget);
      nonNegative("promptTokens", promptTokens);
      nonNegative("generationTokens", generationTokens);
      nonNegative("spansKept", spansKept);
      nonNegative("spansSampledOut", spansSampledOut);
      nonNegative("queueNanos", queueNanos);
      nonNegative("queueCount", queueCount);
      String[] names = {"loadSeconds", "runningSeconds", "waitingSeconds", "kvTokenSeconds"};
      for (int i = 0; i < load.length; i++) {
        if (!(load[i] >= 0) || Double.isInfinite(load[i])) {
          throw new IllegalArgumentException(names[i] + ": must be a finite number of at least 0 (got " + load[i] + ")");
        }
      }
      return new EngineStats(finished, preemptions, running, waiting, kvTokensUsed, kvTokenBudget, promptTokens,
          generationTokens, spansKept, spansSampledOut, queueNanos, queueCount, load.clone());
    }

    private static void nonNegative(String field, long value) {
      if (value < 0) {
        throw new IllegalArgumentException(field + ": must be at least 0 (got " + value + ")");
      }
    }
  }

  /** Finished requests by finish reason (every reason present, zeros included). */
  public Map<FinishReason, Long> requestsFinished() {
    Map<FinishReason, Long> m = new EnumMap<>(FinishReason.class);
    for (FinishReason r : FinishReason.values()) {
      m.put(r, finished[r.ordinal()]);
    }
    return Collections.unmodifiableMap(m);
  }

  /** Finished requests with {@code reason}. */
  public long requestsFinished(FinishReason reason) {
    return finished[reason.ordinal()];
  }

  /** Finished requests, all reasons. */
  public long requestsFinishedTotal() {
    long n = 0;
    for (long f : finished) {
      n += f;
    }
    return n;
  }

  /** Evictions from the running batch (each later recomputed). */
  public long preemptions() {
    return preemptions;
  }

  /** Requests in the running batch now. */
  public int running() {
    return running;
  }

  /** Requests submitted and not yet admitted (preempted ones included) now. */
  public int waiting() {
    return waiting;
  }

  /** KV tokens the running requests hold now. */
  public int kvTokensUsed() {
    return kvTokensUsed;
  }

  public int kvTokenBudget() {
    return kvTokenBudget;
  }

  /** Prompt tokens of finished requests. */
  public long promptTokens() {
    return promptTokens;
  }

  /** Completion tokens of finished requests. */
  public long generationTokens() {
    return generationTokens;
  }

  /** {@code llm_request} spans recorded. */
  public long spansKept() {
    return spansKept;
  }

  /** Finished requests whose span the engine's sampler dropped (0 while tracing is off). */
  public long spansSampledOut() {
    return spansSampledOut;
  }

  /** Summed arrival-to-first-scheduling time of the finished requests that were scheduled, nanoseconds. */
  public long queueNanos() {
    return queueNanos;
  }

  /** The finished requests summed in {@link #queueNanos()}. */
  public long queueCount() {
    return queueCount;
  }

  /**
   * The seconds of the engine's life the load integrals cover ({@link #runningSeconds()} and the others); 0 for
   * an engine that does not measure them (an inference server read over HTTP). The mean number of running
   * requests between two snapshots is the difference of their {@link #runningSeconds()} over the difference of
   * their {@code loadSeconds()}.
   */
  public double loadSeconds() {
    return loadSeconds;
  }

  /** Running requests integrated over time (request-seconds). */
  public double runningSeconds() {
    return runningSeconds;
  }

  /** Waiting requests integrated over time (request-seconds). */
  public double waitingSeconds() {
    return waitingSeconds;
  }

  /** KV tokens held integrated over time (token-seconds). */
  public double kvTokenSeconds() {
    return kvTokenSeconds;
  }

  @Override
  public String toString() {
    return "EngineStats{finished=" + requestsFinished() + ", preemptions=" + preemptions + ", running=" + running
        + ", waiting=" + waiting + ", kv=" + kvTokensUsed + "/" + kvTokenBudget + ", promptTokens=" + promptTokens
        + ", generationTokens=" + generationTokens + ", spansKept=" + spansKept + ", spansSampledOut="
        + spansSampledOut + ", queue=" + queueNanos + "ns/" + queueCount + ", load=" + loadSeconds + "s}";
  }
}
