package dev.ravel.workers.engine;

import dev.ravel.telemetry.context.TraceCarrier;
import java.io.Serializable;
import java.util.Arrays;

/**
 * One completion to generate: a prompt (token ids), how to sample, and the caller's trace context, under
 * which the engine's {@code llm_request} span for it is created. Immutable and serializable (it travels
 * in Ray calls); the prompt is copied in and out.
 */
public final class GenerationRequest implements Serializable {
  private static final long serialVersionUID = 1L;

  private final String requestId;
  private final int[] promptTokens;
  private final SamplingParams params;
  private final TraceCarrier carrier;

  private GenerationRequest(String requestId, int[] promptTokens, SamplingParams params, TraceCarrier carrier) {
    this.requestId = requestId;
    this.promptTokens = promptTokens;
    this.params = params;
    this.carrier = carrier;
  }

  /**
   * A request. {@code carrier} may be {@code null} (the same as {@link TraceCarrier#EMPTY}: the span starts
   * a new trace). Whether the tokens lie inside the model's vocabulary is checked by the engine (an
   * {@link FinishReason#ERROR} result), not here.
   *
   * @throws IllegalArgumentException naming the field when the id is blank, the prompt is empty or holds a
   *     negative token, or params is missing
   */
  /**
   * This request with another trace context: a worker re-stamps each request with its own span's carrier
   * so that the engine's {@code llm_request} span becomes a child of the worker's call.
   */
  public GenerationRequest withCarrier(TraceCarrier newCarrier) {
    return new GenerationRequest(requestId, promptTokens, params, newCarrier == null ? TraceCarrier.EMPTY : newCarrier);
  }

  public static GenerationRequest of(String requestId, int[] promptTokens, SamplingParams params,
      TraceCarrier carrier) {
    if (requestId == null || requestId.isBlank()) {
      throw new IllegalArgumentException("requestId: must not be blank");
    }
    if (promptTokens == null || promptTokens.length == 0) {
      throw new IllegalArgumentException("promptTokens: must hold at least one token (request " + requestId + ")");
    }
    for (int i = 0; i < promptTokens.length; i++) {
      if (promptTokens[i] < 0) {
        throw new IllegalArgumentException("promptTokens: token " + promptTokens[i] + " at index " + i
            + " is negative (request " + requestId + ")");
      }
    }
    if (params == null) {
      throw new IllegalArgumentException("params: required (request " + requestId + ")");
    }
    return new GenerationRequest(requestId, promptTokens.clone(), params,
        carrier == null ? TraceCarrier.EMPTY : carrier);
  }

  public String requestId() {
    return requestId;
  }

  /** A copy of the prompt's token ids. */
  public int[] promptTokens() {
    return promptTokens.clone();
  }

  /** The prompt without copying; callers in this package must not modify it. */
  int[] promptRef() {
    return promptTokens;
  }

  public SamplingParams params() {
    return params;
  }

  /** The caller's trace context (never null). */
  public TraceCarrier carrier() {
    return carrier;
  }

  @Override
  public String toString() {
    return "GenerationRequest{" + requestId + ", promptTokens=" + promptTokens.length + ", " + params + ", "
        + carrier + "}";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof GenerationRequest r && requestId.equals(r.requestId)
        && Arrays.equals(promptTokens, r.promptTokens) && params.equals(r.params) && carrier.equals(r.carrier);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * requestId.hashCode() + Arrays.hashCode(promptTokens)) + params.hashCode();
  }
}
