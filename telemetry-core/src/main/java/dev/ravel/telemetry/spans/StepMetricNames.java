package dev.ravel.telemetry.spans;

import io.opentelemetry.api.common.AttributeKey;

/**
 * The names of a run's per-step metrics, recorded by the driver as each step ends (so a metrics backend plots
 * a run's curves while it runs), in one place. Every one carries {@link RavelAttributes#ALGORITHM_MODE}, not
 * the step (a series per step would grow without bound): each export holds the latest step's values, and
 * {@code steps.jsonl} has the step numbers. The run is the resource's {@code rl.run.id}.
 */
public final class StepMetricNames {
  private StepMetricNames() {}

  /** Instrumentation scope of the driver's step metrics. */
  public static final String INSTRUMENTATION_SCOPE = "dev.ravel.driver.grpo";

  /** Gauge: the mean reward of the step's trajectories. */
  public static final String REWARD_MEAN = "rl.step.reward.mean";
  /** Gauge: the mean reward on the eval set, at the steps that evaluated ({@code grpo.eval_every}). */
  public static final String EVAL_REWARD = "rl.eval.reward";
  /** Gauge: the share of eval completions whose reward reached {@code eval.pass_threshold}. */
  public static final String EVAL_ACCURACY = "rl.eval.accuracy";
  /** Gauge: the population standard deviation of the step's rewards. */
  public static final String REWARD_STD = "rl.step.reward.std";
  /** Gauge: the k3 estimate of KL(policy || reference) of the step's update. */
  public static final String KL = "rl.step.kl";
  /** Gauge: the GRPO loss of the step's update. */
  public static final String LOSS = "rl.step.loss";
  /** Gauge: the share of tokens whose importance ratio was clipped. */
  public static final String CLIP_FRACTION = "rl.step.clip_fraction";
  /** Gauge: the global gradient norm of the step's update before clipping. */
  public static final String GRAD_NORM = "rl.step.grad_norm";
  /** Gauge: the learning rate of the step's first optimizer step. */
  public static final String LEARNING_RATE = "rl.step.learning_rate";
  /** Gauge: the mean entropy of the policy's distribution at the sampled completion tokens. */
  public static final String ENTROPY = "rl.step.entropy";
  /** Gauge, with {@link #CLIP_SIDE}: the share of tokens clipped at the low or high end, or by the dual clip. */
  public static final String CLIP_SIDE_FRACTION = "rl.step.clip_fraction.side";
  /** Gauge: the mean importance ratio of the step's update. */
  public static final String RATIO_MEAN = "rl.step.ratio.mean";
  /** Gauge: the largest importance ratio of the step's update. */
  public static final String RATIO_MAX = "rl.step.ratio.max";
  /** Gauge: the share of tokens whose importance weight reached {@code grpo.tis_cap}. */
  public static final String TIS_TRUNCATED = "rl.step.tis_truncated";
  /** Gauge, {@code {group}}: the step's groups whose rewards were all equal (no learning signal). */
  public static final String ZERO_ADVANTAGE_GROUPS = "rl.groups.zero_advantage";
  /** Gauge, {@code {token}}: the mean completion length of the step. */
  public static final String RESPONSE_LENGTH_MEAN = "rl.completion.length.mean";
  /** Gauge: the share of the step's completions cut at {@code grpo.max_new_tokens}. */
  public static final String COMPLETIONS_CLIPPED_SHARE = "rl.completion.clipped_share";
  /** Gauge, {@code {token}/s}: generated tokens per second of generation (of the step when it generated none). */
  public static final String TOKENS_PER_SECOND = "rl.step.tokens_per_second";
  /** Gauge, with {@link #COMPONENT}: the mean of a named component of the step's rewards. */
  public static final String REWARD_COMPONENT = "rl.step.reward.component";
  /** Counter, {@code {completion}}: completions scored 0 because the reward function raised. */
  public static final String REWARD_FAILED = "rl.step.reward.failed";
  /**
   * Histogram, {@code {version}}: one value per trajectory trained on, how many weight versions behind the trained
   * policy it was sampled (policy lag; 0 in sync mode).
   */
  public static final String POLICY_LAG = "rl.step.policy_lag";
  /** Gauge, {@code {group}}: groups waiting in the replay buffer as the step ended (async). */
  public static final String BUFFER_DEPTH = "rl.buffer.depth";
  /** Gauge, {@code {call}}: generate calls the collector had in flight as the step ended (async). */
  public static final String COLLECTOR_IN_FLIGHT = "rl.collector.in_flight";
  /** Histogram, seconds: the step's wall time. */
  public static final String DURATION = "rl.step.duration";
  /** Histogram, seconds, with {@link #PHASE}: the wall time of each span group of the step. */
  public static final String PHASE_DURATION = "rl.step.phase.duration";
  /** Counter, {@code {trajectory}}, with {@link #TRAJECTORY_STATE}: trajectories trained on or dropped for age. */
  public static final String TRAJECTORIES = "rl.step.trajectories";

  /** The span group a {@link #PHASE_DURATION} point is for ({@code generation}, {@code training}, ...). */
  public static final AttributeKey<String> PHASE = AttributeKey.stringKey("rl.phase");
  /** {@code low}, {@code high} or {@code dual}, on {@link #CLIP_SIDE_FRACTION}. */
  public static final AttributeKey<String> CLIP_SIDE = AttributeKey.stringKey("rl.clip.side");
  /** The reward component a {@link #REWARD_COMPONENT} point is for (the name your reward function gave it). */
  public static final AttributeKey<String> COMPONENT = AttributeKey.stringKey("rl.reward.component");
  /** {@code used} or {@code dropped}, on {@link #TRAJECTORIES}. */
  public static final AttributeKey<String> TRAJECTORY_STATE = AttributeKey.stringKey("rl.trajectory.state");
}
