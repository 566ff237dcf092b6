package dev.ravel.telemetry.spans;

import dev.ravel.telemetry.config.SpanGroup;
import java.util.Optional;

/**
 * The phases of a GRPO step, each one value: its span name, the span group that switches it on, the short
 * label the views print, the progress label (the {@code phases} key of the progress line and
 * {@code run.json}: its span group's name, so log-probs, advantages and the update add up to
 * {@code training}) and its goodput {@link Bucket}. The loops open phases by this value, the views
 * recognise them by it; no phase is named anywhere else.
 *
 * <p>The declaration order is the pipeline order the views sort phases in.
 */
public enum Phase {
  DATA_PROCESSING(SpanNames.GRPO_DATA_PROCESSING, SpanGroup.DATA, "data", Bucket.OVERHEAD),
  REFIT(SpanNames.GRPO_REFIT, SpanGroup.REFIT, "refit", Bucket.OVERHEAD),
  EVALUATION(SpanNames.GRPO_EVALUATE, SpanGroup.EVAL, "eval", Bucket.OVERHEAD),
  GENERATION(SpanNames.GRPO_GENERATION, SpanGroup.GENERATION, "gen", Bucket.PRODUCTIVE),
  REWARD(SpanNames.GRPO_REWARD, SpanGroup.REWARD, "reward", Bucket.PRODUCTIVE),
  LOGPROBS(SpanNames.GRPO_LOGPROBS, SpanGroup.TRAINING, "logprobs", Bucket.PRODUCTIVE),
  ADVANTAGE(SpanNames.GRPO_ADVANTAGE, SpanGroup.TRAINING, "adv", Bucket.PRODUCTIVE),
  TRAINING(SpanNames.GRPO_TRAINING, SpanGroup.TRAINING, "train", Bucket.PRODUCTIVE),
  CHECKPOINTING(SpanNames.GRPO_CHECKPOINT, SpanGroup.CHECKPOINT, "ckpt", Bucket.OVERHEAD),
  BUFFER_STARVATION(SpanNames.IDLE_BUFFER_STARVATION, SpanGroup.IDLE, "starved", Bucket.IDLE),
  REFIT_BUBBLE(SpanNames.IDLE_REFIT_BUBBLE, SpanGroup.IDLE, "bubble", Bucket.IDLE);

  private static final String GRPO_PREFIX = "rl.grpo.";
  private static final String RL_PREFIX = "rl.";

  private final String spanName;
  private final SpanGroup group;
  private final String label;
  private final Bucket bucket;
  private final String key;

  Phase(String spanName, SpanGroup group, String label, Bucket bucket) {
    this.spanName = spanName;
    this.group = group;
    this.label = label;
    this.bucket = bucket;
    this.key = keyOf(spanName);
  }

  /** The span this phase opens ({@code rl.grpo.reward_calculation}, {@code rl.idle.refit_bubble}, ...). */
  public String spanName() {
    return spanName;
  }

  /** The span group that switches this phase's span on. */
  public SpanGroup group() {
    return group;
  }

  /** The short label of one-line summaries and waterfalls ({@code gen}, {@code adv}, {@code starved}, ...). */
  public String label() {
    return label;
  }

  /**
   * The name this phase's wall time is reported under by the progress line and in {@code run.json}: its span
   * group's name ({@code data}, {@code refit}, {@code generation}, {@code reward}, {@code training},
   * {@code checkpoint}, {@code idle}).
   */
  public String progressLabel() {
    return group.configName();
  }

  public Bucket bucket() {
    return bucket;
  }

  /**
   * The key the views use for this phase: the span name without {@code rl.grpo.} ({@code reward_calculation}),
   * or without {@code rl.} for idle spans ({@code idle.refit_bubble}).
   */
  public String key() {
    return key;
  }

  /** The phase a span of this name belongs to, if any. */
  public static Optional<Phase> ofSpanName(String spanName) {
    for (Phase p : values()) {
      if (p.spanName.equals(spanName)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  /** The phase with this view key, if any. */
  public static Optional<Phase> ofKey(String key) {
    for (Phase p : values()) {
      if (p.key.equals(key)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  /**
   * The view key of any span name: a phase's {@link #key()}; for other names the same rule ({@code rl.grpo.X}
   * gives {@code X}, {@code rl.idle.X} gives {@code idle.X}), and any other name as it is.
   */
  public static String keyOf(String spanName) {
    if (spanName.startsWith(GRPO_PREFIX)) {
      return spanName.substring(GRPO_PREFIX.length());
    }
    if (spanName.startsWith(SpanNames.IDLE_PREFIX)) {
      return spanName.substring(RL_PREFIX.length());
    }
    return spanName;
  }

  /** Whether a span of this name is idle time: an idle phase, or any other {@code rl.idle.*} span. */
  public static boolean isIdle(String spanName) {
    return spanName.startsWith(SpanNames.IDLE_PREFIX);
  }
}
