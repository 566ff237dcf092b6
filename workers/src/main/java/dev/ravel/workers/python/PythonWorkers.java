package dev.ravel.workers.python;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.workers.grpo.GrpoConfig;
import io.ray.api.function.PyActorClass;
import java.util.List;

/**
 * Ravel's Python workers as the Java driver creates them: their classes in the package {@code ravel_workers}
 * (on the job's code search path) and the JSON specs their constructors take ({@code docs/python-workers.md},
 * "Specs").
 */
public final class PythonWorkers {
  private PythonWorkers() {}

  /** The Python module that holds the actor classes. */
  public static final String MODULE = "ravel_workers.actors";
  /** The Python generation worker ({@code GenerationWorker} role). */
  public static final PyActorClass GENERATION_WORKER = PyActorClass.of(MODULE, "GenerationWorker");
  /** The Python policy trainer ({@code PolicyTrainer} role). */
  public static final PyActorClass POLICY_TRAINER = PyActorClass.of(MODULE, "PolicyTrainer");
  /** The Python reward environment of a run on your data ({@code RewardEnvironment} role). */
  public static final PyActorClass REWARD_ENVIRONMENT = PyActorClass.of(MODULE, "RewardEnvironment");
  /** Generation engines of a Python generation worker. */
  public static final List<String> ENGINES = List.of("transformers", "vllm");
  /** Where a Python worker puts its model. */
  public static final List<String> DEVICES = List.of("auto", "cpu", "cuda");
  /**
   * How a trainer group holds the policy ({@code trainer.strategy}; the contract's {@code trainer_strategies}), the
   * first the default: {@code fsdp2} shards parameters, gradients and optimizer state over the ranks (PyTorch's
   * {@code fully_shard}), {@code ddp} replicates them ({@code DistributedDataParallel}).
   */
  public static final List<String> TRAINER_STRATEGIES = List.of("fsdp2", "ddp");
  /**
   * The format of the weights a Python trainer's {@code weights} call leaves in the object store for the Python
   * workers' {@code updateWeights} (a dict of {@link #WEIGHTS_KEYS}: the state dict as one byte buffer that Ray
   * keeps out of band, and its index; {@code ravel_workers/weights.py}). The driver passes the object's reference
   * on without reading it.
   */
  public static final String WEIGHTS_FORMAT = "ravel.weights.flat/1";
  /** The keys of the Python weights' dict, in order. */
  public static final List<String> WEIGHTS_KEYS = List.of("format", "version", "tensors", "data");

  private static final ObjectMapper JSON = new ObjectMapper();

  /** A generation worker's spec. */
  public static String generationSpec(PythonModel model, long seed, int eosToken, String modelName, String engine,
      int maxRunningRequests, String device) {
    if (!ENGINES.contains(engine)) {
      throw new IllegalArgumentException("engine: unknown '" + engine + "' (valid: " + String.join(", ", ENGINES) + ")");
    }
    ObjectNode o = JSON.createObjectNode();
    o.set("model", model(model));
    o.put("seed", seed);
    o.put("eos_token", eosToken);
    o.put("model_name", modelName);
    o.put("engine", engine);
    o.put("max_running_requests", maxRunningRequests);
    o.put("device", device(device));
    return o.toString();
  }

  /** The policy trainer's spec. */
  public static String trainerSpec(PythonModel model, long seed, String device, GrpoConfig grpo) {
    return trainerSpec(model, seed, device, grpo, null);
  }

  /** The policy trainer's spec, going on from the trainer-state file {@code resumeFrom} when it is not null. */
  public static String trainerSpec(PythonModel model, long seed, String device, GrpoConfig grpo,
      java.nio.file.Path resumeFrom) {
    return trainerSpec(model, seed, device, grpo, resumeFrom, 0, 1, TRAINER_STRATEGIES.get(0));
  }

  /**
   * The spec of rank {@code rank} of a trainer group of {@code worldSize} ranks ({@code trainer.workers}) that holds
   * the policy by {@code strategy} ({@link #TRAINER_STRATEGIES}), going on from {@code resumeFrom} when it is not
   * null (every rank from the same file).
   */
  public static String trainerSpec(PythonModel model, long seed, String device, GrpoConfig grpo,
      java.nio.file.Path resumeFrom, int rank, int worldSize, String strategy) {
    if (worldSize < 1 || rank < 0 || rank >= worldSize) {
      throw new IllegalArgumentException("rank " + rank + " is not a rank of a trainer group of " + worldSize);
    }
    if (!TRAINER_STRATEGIES.contains(strategy)) {
      throw new IllegalArgumentException("strategy: unknown '" + strategy + "' (valid: "
          + String.join(", ", TRAINER_STRATEGIES) + ")");
    }
    ObjectNode o = JSON.createObjectNode();
    o.put("rank", rank);
    o.put("world_size", worldSize);
    o.put("strategy", strategy);
    if (resumeFrom != null) {
      o.put("resume_from", resumeFrom.toAbsolutePath().toString());
    }
    o.set("model", model(model));
    o.put("seed", seed);
    o.put("device", device(device));
    o.set("grpo", grpo(grpo));
    return o.toString();
  }

  /**
   * The trainer's GRPO settings as the Python {@code GrpoSettings} reads them: every {@link GrpoConfig} setting the
   * loss and the optimiser use, under its snake-case name (the contract's {@code grpo_defaults} keys).
   */
  public static ObjectNode grpo(GrpoConfig grpo) {
    ObjectNode g = JSON.createObjectNode();
    g.put("group_size", grpo.groupSize());
    g.put("learning_rate", grpo.learningRate());
    g.put("weight_decay", grpo.weightDecay());
    g.put("max_grad_norm", grpo.maxGradNorm());
    g.put("temperature", grpo.temperature());
    g.put("advantage_eps", grpo.advantageEps());
    g.put("kl_beta", grpo.klBeta());
    g.put("loss_type", grpo.lossType().configName());
    g.put("scale_rewards", grpo.scaleRewards().configName());
    g.put("filter_zero_advantage", grpo.filterZeroAdvantage());
    g.put("clip_epsilon_low", grpo.clipEpsilonLow());
    g.put("clip_epsilon_high", grpo.clipEpsilonHigh());
    g.put("clip_ratio_c", grpo.clipRatioC());
    g.put("kl_estimator", grpo.klEstimator().configName());
    g.put("kl_in_reward", grpo.klInReward());
    g.put("ppo_epochs", grpo.ppoEpochs());
    g.put("micro_batch_size", grpo.microBatchSize());
    g.put("lr_scheduler", grpo.lrSchedule().configName());
    g.put("warmup_steps", grpo.warmupSteps());
    g.put("total_steps", grpo.totalSteps());
    g.put("tis_cap", grpo.tisCap());
    g.put("max_new_tokens", grpo.maxNewTokens());
    return g;
  }

  /**
   * The reward environment's spec: the checkpoint whose tokenizer decodes the completions, the reward function
   * ({@code exact_match}, {@code math} or {@code package.module:function}) and the folders searched first for it.
   */
  public static String rewardSpec(String modelPath, String function, List<String> codePath) {
    return rewardSpec(modelPath, function, codePath, "fail", 0);
  }

  /**
   * As above, with what a raising function does ({@code fail} the step, or score {@code zero}) and the longest a
   * call may take ({@code timeoutSeconds}, 0: no limit).
   */
  public static String rewardSpec(String modelPath, String function, List<String> codePath, String onError,
      double timeoutSeconds) {
    ObjectNode o = JSON.createObjectNode();
    o.put("model_path", modelPath);
    o.put("function", function);
    o.put("on_error", onError);
    o.put("timeout_s", timeoutSeconds);
    com.fasterxml.jackson.databind.node.ArrayNode folders = o.putArray("code_path");
    codePath.forEach(folders::add);
    return o.toString();
  }

  private static ObjectNode model(PythonModel m) {
    ObjectNode o = JSON.createObjectNode();
    o.put("family", m.family());
    o.put("vocab_size", m.vocabSize());
    o.put("layers", m.layers());
    o.put("hidden", m.hidden());
    o.put("heads", m.heads());
    o.put("max_positions", m.maxPositions());
    if (!m.path().isEmpty()) {
      o.put("path", m.path());
      o.put("dtype", m.dtype());
    }
    return o;
  }

  private static String device(String device) {
    if (!DEVICES.contains(device)) {
      throw new IllegalArgumentException("device: unknown '" + device + "' (valid: " + String.join(", ", DEVICES) + ")");
    }
    return device;
  }
}
