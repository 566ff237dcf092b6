package dev.ravel.workers.engine;

/** Why a generation request ended. */
public enum FinishReason {
  /** The end-of-sequence token was sampled. */
  STOP("stop"),
  /** {@code maxTokens} were generated, or the sequence outgrew the engine's KV token budget. */
  LENGTH("length"),
  /** The engine was closed before the request finished. */
  ABORT("abort"),
  /** The request could not be served (see {@link GenerationResult#error()}). */
  ERROR("error");

  private final String wireName;

  FinishReason(String wireName) {
    this.wireName = wireName;
  }

  /** The lower-case name vLLM and the OpenAI API use ({@code stop}, {@code length}, {@code abort}, {@code error}). */
  public String wireName() {
    return wireName;
  }
}
