package dev.ravel.telemetry.config;

import java.util.Locale;

/**
 * A family of spans that is switched on or off as a whole. A span whose group is off is never created,
 * so it costs nothing. Which phase belongs to which group is said once, in
 * {@link dev.ravel.telemetry.spans.Phase}.
 */
public enum SpanGroup {
  /** The root of every step's trace ({@code rl.grpo.step}). */
  STEP,
  /** Data processing ({@link dev.ravel.telemetry.spans.Phase#DATA_PROCESSING}). */
  DATA,
  /** The refit phase and the workers' weight updates. */
  REFIT,
  /** The generation phase and each generate call ({@code rl.vllm.generate}). */
  GENERATION,
  /** The reward phase. */
  REWARD,
  /** Log-probs, advantages and policy training. */
  TRAINING,
  /** The checkpointing phase. */
  CHECKPOINT,
  /** Evaluation on the eval set ({@link dev.ravel.telemetry.spans.Phase#EVALUATION}). */
  EVAL,
  /** The span each actor opens for a call it serves ({@code rl.worker.generate}, ...). */
  WORKER,
  /** Time spent waiting (the idle phases). */
  IDLE,
  /** Ray job submission and the job-level span. */
  JOB,
  /** The inference engine's per-request {@code llm_request} spans (sampled on their own). */
  ENGINE;

  /** {@return the name used in YAML and in the environment ({@code generation}, {@code engine}, ...)} */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses a group name; the error names {@code key} and lists the valid names.
   *
   * @param key the config key or environment variable the name comes from, for the error message
   * @param value the group's config name, in any case, surrounding whitespace ignored
   * @return the group named {@code value}
   * @throws ConfigException if {@code value} names no group
   */
  public static SpanGroup parse(String key, String value) {
    for (SpanGroup g : values()) {
      if (g.configName().equals(value.trim().toLowerCase(Locale.ROOT))) {
        return g;
      }
    }
    throw new ConfigException(key, "unknown span group '" + value + "' (valid: " + Names.of(values()) + ")");
  }
}
