package dev.ravel.telemetry.spans;

import io.opentelemetry.api.common.AttributeKey;

/** Every attribute key Ravel sets, in one place. */
public final class RavelAttributes {
  private RavelAttributes() {}

  // resource
  public static final AttributeKey<String> RUN_ID = AttributeKey.stringKey("rl.run.id");
  public static final AttributeKey<String> PROCESS_ROLE = AttributeKey.stringKey("rl.process.role");
  public static final AttributeKey<String> RAY_JOB_ID = AttributeKey.stringKey("ray.job.id");
  public static final AttributeKey<String> RAY_ACTOR_ID = AttributeKey.stringKey("ray.actor.id");
  public static final AttributeKey<String> RAY_NODE_ID = AttributeKey.stringKey("ray.node.id");
  public static final AttributeKey<Long> PROCESS_PID = AttributeKey.longKey("process.pid");

  // actor calls
  public static final AttributeKey<String> ACTOR_ROLE = AttributeKey.stringKey("rl.actor.role");
  public static final AttributeKey<String> ACTOR_METHOD = AttributeKey.stringKey("rl.actor.method");

  // steps and generation
  public static final AttributeKey<Long> STEP = AttributeKey.longKey("rl.step");
  public static final AttributeKey<String> ALGORITHM_MODE = AttributeKey.stringKey("rl.mode");
  public static final AttributeKey<String> GENERATION_MODE = AttributeKey.stringKey("rl.generation.mode");
  public static final AttributeKey<Long> WEIGHT_VERSION = AttributeKey.longKey("rl.weight_version");
  public static final AttributeKey<Long> TARGET_WEIGHT_VERSION = AttributeKey.longKey("rl.target_weight_version");
  public static final AttributeKey<Long> NUM_PROMPTS = AttributeKey.longKey("rl.num_prompts");
  public static final AttributeKey<Long> NUM_REQUESTS = AttributeKey.longKey("rl.num_requests");
  /** Trajectories a step trained on. */
  public static final AttributeKey<Long> NUM_TRAJECTORIES = AttributeKey.longKey("rl.num_trajectories");
  /** Trajectories discarded while gathering a step's batch because their weights were too old. */
  public static final AttributeKey<Long> DROPPED_TRAJECTORIES = AttributeKey.longKey("rl.dropped_trajectories");
  /** Groups of a step whose rewards were all equal, so their advantages (and their learning signal) are zero. */
  public static final AttributeKey<Long> FLAT_GROUPS = AttributeKey.longKey("rl.grpo.flat_groups");
  /** Mean reward of a step's batch. */
  public static final AttributeKey<Double> REWARD_MEAN = AttributeKey.doubleKey("rl.reward.mean");
}
