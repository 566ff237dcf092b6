package dev.ravel.workers.engine;

import java.nio.charset.StandardCharsets;

/**
 * The engine's own span sampler, decided when a request finishes: keep its {@code llm_request} span if
 * tracing is on and the request errored, was preempted, was slow end to end, or its id falls in the
 * sampled share. The share is chosen by a 64-bit hash of the request id, so the same id is always
 * decided the same way, in every process.
 */
public final class RequestSampler {
  /** The keep reason of a span kept because its caller sampled it ({@link EngineConfig#parentBased()}). */
  public static final String PARENT = "parent";

  private final boolean tracing;
  private final double ratio;
  private final long slowNanos;
  private final boolean parentBased;

  RequestSampler(boolean tracing, double ratio, long slowNanos) {
    this(tracing, ratio, slowNanos, false);
  }

  RequestSampler(boolean tracing, double ratio, long slowNanos, boolean parentBased) {
    this.tracing = tracing;
    this.ratio = ratio;
    this.slowNanos = slowNanos;
    this.parentBased = parentBased;
  }

  /**
   * Whether the engine's ratio sampler keeps request {@code requestId} at {@code ratio} (the share by id alone,
   * without the error, preemption and slow-request rules): what a client can decide before it sends a request,
   * to tell a server whose tracer is parent-based (vLLM's) whether to trace it.
   */
  public static boolean inRatio(String requestId, double ratio) {
    return unitHash(requestId) < ratio;
  }

  boolean tracing() {
    return tracing;
  }

  /**
   * Why the span is kept ({@code error}, {@code preempted}, {@code slow}, {@code ratio}), or null when it
   * is dropped (always null with tracing off).
   */
  String keepReason(String requestId, boolean error, int preemptions, long e2eNanos) {
    return keepReason(requestId, error, preemptions, e2eNanos, true);
  }

  /** As above; {@code parentSampled}: the caller's sampled flag, all that decides in parent-based mode. */
  String keepReason(String requestId, boolean error, int preemptions, long e2eNanos, boolean parentSampled) {
    if (!tracing) {
      return null;
    }
    if (parentBased) {
      return parentSampled ? PARENT : null;
    }
    if (error) {
      return "error";
    }
    if (preemptions > 0) {
      return "preempted";
    }
    if (e2eNanos >= slowNanos) {
      return "slow";
    }
    return unitHash(requestId) < ratio ? "ratio" : null;
  }

  /** The request id mapped to [0, 1): FNV-1a over its UTF-8 bytes, then the SplitMix64 finalizer. */
  static double unitHash(String requestId) {
    long h = 0xCBF29CE484222325L;
    for (byte b : requestId.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xFF;
      h *= 0x100000001B3L;
    }
    h = (h ^ (h >>> 30)) * 0xBF58476D1CE4E5B9L;
    h = (h ^ (h >>> 27)) * 0x94D049BB133111EBL;
    h = h ^ (h >>> 31);
    return (h >>> 11) * 0x1.0p-53;
  }
}
