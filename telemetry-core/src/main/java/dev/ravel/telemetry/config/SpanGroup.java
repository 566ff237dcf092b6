package dev.ravel.telemetry.config;

import java.util.Locale;

/**
 * A family of spans that is switched on or off as a whole. A span whose group is off is never created,
 * so it costs nothing.
 */
public enum SpanGroup {
  /** {@code rl.grpo.step}: the root of every step's trace. */
  STEP,
  /** {@code rl.grpo.data_processing}. */
  DATA,
  /** {@code rl.grpo.refit} and the workers' weight updates. */
  REFIT,
  /** {@code rl.grpo.generation} and {@code rl.vllm.generate}. */
  GENERATION,
  /** {@code rl.grpo.reward_calculation}. */
  REWARD,
  /** Log-probs, advantages and policy training. */
  TRAINING,
  /** {@code rl.grpo.checkpointing}. */
  CHECKPOINT,
  /** The span each actor opens for a call it serves ({@code rl.worker.generate}, ...). */
  WORKER,
  /** {@code rl.idle.*}: time spent waiting. */
  IDLE,
  /** Ray job submission and the job-level span. */
  JOB,
  /** The inference engine's per-request {@code llm_request} spans (sampled on their own). */
  ENGINE;

  /** The name used in YAML and in the environment ({@code generation}, {@code engine}, ...). */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Parses a group name; the error names {@code key} and lists the valid names. */
  public static SpanGroup parse(String key, String value) {
    for (SpanGroup g : values()) {
      if (g.configName().equals(value.trim().toLowerCase(Locale.ROOT))) {
        return g;
      }
    }
    throw new ConfigException(key, "unknown span group '" + value + "' (valid: " + Names.of(values()) + ")");
  }
}
