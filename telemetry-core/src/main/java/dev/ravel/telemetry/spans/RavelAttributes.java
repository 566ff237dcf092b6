package dev.ravel.telemetry.spans;

import io.opentelemetry.api.common.AttributeKey;

/**
 * Every attribute key Ravel sets or reads on its own spans and resources, in one place (the engine's are in
 * {@link EngineNames}). Written and read through these keys only.
 */
public final class RavelAttributes {
  private RavelAttributes() {}

  // resource
  public static final AttributeKey<String> SERVICE_NAME = AttributeKey.stringKey("service.name");
  public static final AttributeKey<String> RUN_ID = AttributeKey.stringKey("rl.run.id");
  public static final AttributeKey<String> PROCESS_ROLE = AttributeKey.stringKey("rl.process.role");
  public static final AttributeKey<String> RAY_JOB_ID = AttributeKey.stringKey("ray.job.id");
  public static final AttributeKey<String> RAY_ACTOR_ID = AttributeKey.stringKey("ray.actor.id");
  public static final AttributeKey<String> RAY_NODE_ID = AttributeKey.stringKey("ray.node.id");
  /** The address of the Ray node the process runs on (Ray's node manager address). */
  public static final AttributeKey<String> RAY_NODE_IP = AttributeKey.stringKey("ray.node.ip");
  /** The host's name (OpenTelemetry's {@code host.name}). */
  public static final AttributeKey<String> HOST_NAME = AttributeKey.stringKey("host.name");
  public static final AttributeKey<Long> PROCESS_PID = AttributeKey.longKey("process.pid");
  /**
   * The process that started this one (OpenTelemetry's name): on a launched inference server's spans as the run's
   * receiver writes them, the generation worker that launched it (what places the server's start-up under it).
   */
  public static final AttributeKey<Long> PROCESS_PARENT_PID = AttributeKey.longKey("process.parent_pid");

  // actor calls
  public static final AttributeKey<String> ACTOR_ROLE = AttributeKey.stringKey("rl.actor.role");
  public static final AttributeKey<String> ACTOR_METHOD = AttributeKey.stringKey("rl.actor.method");
  /** How many actors of a role a run's start-up created ({@code rl.run.actors.<role>}). */
  public static final AttributeKey<Long> ACTOR_COUNT = AttributeKey.longKey("rl.actor.count");
  /** Whether the driver started a local Ray head (true) or connected to a running cluster ({@code rl.run.ray}). */
  public static final AttributeKey<Boolean> RAY_HEAD_STARTED = AttributeKey.booleanKey("rl.ray.head_started");

  // faults: a call to an actor whose process died, and its retry
  /** The actor a failed call or its retry went to: its role and index, {@code generation_worker/1}. */
  public static final AttributeKey<String> FAULT_ACTOR = AttributeKey.stringKey("rl.fault.actor");
  /** Which attempt of the call this is: 1 the first, 2 the first retry. */
  public static final AttributeKey<Long> FAULT_ATTEMPT = AttributeKey.longKey("rl.fault.attempt");
  /** The process id of the actor process that died under the call. */
  public static final AttributeKey<Long> FAULT_DEAD_PID = AttributeKey.longKey("rl.fault.dead_pid");
  /** The address of the node the process that died ran on. */
  public static final AttributeKey<String> FAULT_NODE = AttributeKey.stringKey("rl.fault.node");
  /** On a retry: whether the cluster counts that node dead once the actor was restarted (a node lost). */
  public static final AttributeKey<Boolean> FAULT_NODE_DEAD = AttributeKey.booleanKey("rl.fault.node_dead");

  // phases
  /** A phase span's goodput bucket: {@code productive}, {@code overhead}, {@code idle}, {@code wasted}. */
  public static final AttributeKey<String> BUCKET = AttributeKey.stringKey("rl.bucket");

  // jobs and the demo
  /** The Ray job submission id, on the submitter's and the job's spans. */
  public static final AttributeKey<String> JOB_SUBMISSION_ID = AttributeKey.stringKey("ray.job.submission_id");
  /** The Ray dashboard a job was submitted to. */
  public static final AttributeKey<String> RAY_DASHBOARD_URL = AttributeKey.stringKey("ray.dashboard.url");
  /** How many relayed calls the demo made. */
  public static final AttributeKey<Long> DEMO_CALLS = AttributeKey.longKey("rl.demo.calls");

  // steps and generation
  public static final AttributeKey<Long> STEP = AttributeKey.longKey("rl.step");
  public static final AttributeKey<String> ALGORITHM_MODE = AttributeKey.stringKey("rl.mode");
  public static final AttributeKey<String> GENERATION_MODE = AttributeKey.stringKey("rl.generation.mode");
  public static final AttributeKey<Long> WEIGHT_VERSION = AttributeKey.longKey("rl.weight_version");
  /** On {@code rl.grpo.step}: the largest policy lag of the step's trajectories, in weight versions. */
  public static final AttributeKey<Long> POLICY_LAG_MAX = AttributeKey.longKey("rl.policy_lag.max");
  /** On {@code rl.grpo.step}: the mean policy lag of the step's trajectories, in weight versions. */
  public static final AttributeKey<Double> POLICY_LAG_MEAN = AttributeKey.doubleKey("rl.policy_lag.mean");
  /** Bytes of weights a refit stage moved (on every {@code rl.refit.*} stage that moves weights). */
  public static final AttributeKey<Long> REFIT_BYTES = AttributeKey.longKey("rl.refit.bytes");
  /** On a trainer rank's {@code rl.trainer.train}: how the group holds the policy ({@code trainer.strategy}). */
  public static final AttributeKey<String> TRAINER_STRATEGY = AttributeKey.stringKey("rl.trainer.strategy");
  /** On a trainer rank's {@code rl.trainer.train}: the bytes of the policy's parameters that rank holds. */
  public static final AttributeKey<Long> TRAINER_PARAM_BYTES = AttributeKey.longKey("rl.trainer.param_bytes");
  /** On a trainer rank's {@code rl.trainer.train}: the bytes of optimizer state (AdamW's moments) that rank holds. */
  public static final AttributeKey<Long> TRAINER_OPTIMIZER_BYTES = AttributeKey.longKey("rl.trainer.optimizer_bytes");
  /** How a refit's weights travel ({@code ravel-file}: a weights file the servers read). */
  public static final AttributeKey<String> REFIT_TRANSPORT = AttributeKey.stringKey("rl.refit.transport");
  /** The pause mode of a native refit ({@code wait}, {@code keep}). */
  public static final AttributeKey<String> REFIT_PAUSE_MODE = AttributeKey.stringKey("rl.refit.pause_mode");
  public static final AttributeKey<Long> TARGET_WEIGHT_VERSION = AttributeKey.longKey("rl.target_weight_version");
  public static final AttributeKey<Long> NUM_PROMPTS = AttributeKey.longKey("rl.num_prompts");
  public static final AttributeKey<Long> NUM_REQUESTS = AttributeKey.longKey("rl.num_requests");
  /** Trajectories a step trained on. */
  public static final AttributeKey<Long> NUM_TRAJECTORIES = AttributeKey.longKey("rl.num_trajectories");
  /** On a step's link to an {@code rl.vllm.generate} span: how many of the step's trajectories that call produced. */
  public static final AttributeKey<Long> LINK_TRAJECTORIES = AttributeKey.longKey("rl.link.trajectories");
  /** Trajectories discarded while gathering a step's batch because their weights were too old. */
  public static final AttributeKey<Long> DROPPED_TRAJECTORIES = AttributeKey.longKey("rl.dropped_trajectories");
  /**
   * Groups of a step whose rewards were all equal, so their advantages (and their learning signal) are zero
   * ({@code grpo.filter_zero_advantage} leaves them out of the update).
   */
  public static final AttributeKey<Long> ZERO_ADVANTAGE_GROUPS = AttributeKey.longKey("rl.groups.zero_advantage");
  /** On a step: the optimizer steps its update took ({@code grpo.ppo_epochs} passes; 0 when nothing was kept). */
  public static final AttributeKey<Long> TRAIN_EPOCHS = AttributeKey.longKey("rl.train.epochs");
  /** On a step: the global gradient norm of its update before clipping. */
  public static final AttributeKey<Double> TRAIN_GRAD_NORM = AttributeKey.doubleKey("rl.train.grad_norm");
  /** On a step: the learning rate of its first optimizer step. */
  public static final AttributeKey<Double> TRAIN_LEARNING_RATE = AttributeKey.doubleKey("rl.train.learning_rate");
  /** On a step: its completions cut at {@code grpo.max_new_tokens} before they ended. */
  public static final AttributeKey<Long> COMPLETIONS_CLIPPED = AttributeKey.longKey("rl.completion.clipped");
  /** On a reward environment's call ({@code rl.reward.score}): the reward function ({@code reward.function}). */
  public static final AttributeKey<String> REWARD_FUNCTION = AttributeKey.stringKey("rl.reward.function");
  /**
   * On a reward call, and on a step: completions scored 0 because the reward function raised
   * ({@code reward.on_error: zero}).
   */
  public static final AttributeKey<Long> REWARD_FAILED = AttributeKey.longKey("rl.reward.failed");
  /** Mean reward of a step's batch. */
  public static final AttributeKey<Double> REWARD_MEAN = AttributeKey.doubleKey("rl.reward.mean");

  // HTTP (OpenTelemetry semantic conventions), on a failed request to an inference server
  public static final AttributeKey<String> URL_FULL = AttributeKey.stringKey("url.full");
  public static final AttributeKey<String> HTTP_REQUEST_METHOD = AttributeKey.stringKey("http.request.method");
  public static final AttributeKey<Long> HTTP_RESPONSE_STATUS_CODE = AttributeKey.longKey("http.response.status_code");
  public static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
}
