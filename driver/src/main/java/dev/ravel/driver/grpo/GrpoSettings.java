package dev.ravel.driver.grpo;

import dev.ravel.driver.config.Keys;
import dev.ravel.driver.config.RunConfig;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.generation.openai.ServerBackendSpec;
import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.KlEstimator;
import dev.ravel.workers.grpo.LossType;
import dev.ravel.workers.grpo.LrSchedule;
import dev.ravel.workers.grpo.RewardScale;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.python.PythonModel;
import io.ray.api.placementgroup.PlacementStrategy;
import java.util.Locale;
import java.util.Map;

/**
 * A run's GRPO and generation settings, typed and read once from its {@link RunConfig} (which has validated
 * them, naming any bad key).
 *
 * @param steps training steps
 * @param promptsPerStep prompts (groups) per step
 * @param groupSize completions per prompt (G)
 * @param seed the run's seed, from which every step's batch and sampling seeds derive
 * @param maxAge how many weight versions older than the step a trajectory may be (async)
 * @param checkpointEvery save weights every this many steps (0: only after the last step)
 * @param workers generation workers
 * @param kvTokenBudget each engine's KV-cache budget in tokens
 * @param maxRunningRequests each engine's running batch bound
 * @param maxConcurrency calls a generation worker serves at once
 * @param grpo the trainer's settings
 * @param sampling the generation sampling settings (each request gets its own seed)
 * @param modelName the policy's name in engine spans and metrics, and the model requested from servers
 * @param servers the inference servers of the openai backend; null for the embedded engine
 * @param python the Python workers' settings; null when the workers are Java
 * @param groupsPerCall groups per async generate call ({@code grpo.groups_per_call}; 0 there: a step's groups
 *     split evenly over the workers, one call each)
 * @param javaModel the Java TinyLm's shape ({@code model.java_hidden}, {@code model.java_embed})
 * @param maxRestarts how often Ray restarts a generation worker or the reward environment whose process died
 *     ({@code cluster.max_restarts}); the calls that were in flight on it are issued again
 * @param data your model's data and reward ({@code data.train}, {@code reward.*}); null for the built-in task
 * @param inflightUpdates async: the collector's calls go on through each refit, their requests finishing under
 *     the new weights ({@code generation.inflight_updates}); otherwise it drains first
 * @param placement where the generation workers go ({@code generation.placement}, {@code generation.num_cpus})
 * @param restartWaitMs how long a call waits for a dead worker's restart ({@code cluster.node_loss_timeout_s})
 */
record GrpoSettings(boolean async, int steps, int promptsPerStep, int groupSize, long seed, long maxAge,
    int checkpointEvery, int workers, int kvTokenBudget, int maxRunningRequests, int maxConcurrency,
    GrpoConfig grpo, SamplingParams sampling, String modelName, ServerBackendSpec servers, Python python,
    int groupsPerCall, dev.ravel.workers.model.ModelSpec javaModel, int maxRestarts, Data data, Reward reward,
    boolean inflightUpdates, Placement placement, long restartWaitMs) {

  /**
   * Where the generation workers and the trainer ranks go.
   *
   * @param strategy the generation workers' placement strategy, or null for none (Ray places each worker on its own)
   * @param cpus the CPUs of each worker's bundle
   * @param gpus the GPUs of each worker's bundle (Python workers' {@code generation.num_gpus})
   * @param workerResources the other resources each generation worker asks for ({@code generation.resources})
   * @param trainerResources the resources the trainer, the replay buffer and the collector ask for
   *     ({@code trainer.resources})
   * @param trainerStrategy the trainer ranks' placement strategy ({@code trainer.placement}), or null for none
   * @param trainerCpus the CPUs of each trainer rank's bundle ({@code trainer.num_cpus})
   * @param trainerGpus the GPUs of each trainer rank ({@code trainer.num_gpus}, Python workers)
   */
  record Placement(PlacementStrategy strategy, double cpus, double gpus, Map<String, Double> workerResources,
      Map<String, Double> trainerResources, PlacementStrategy trainerStrategy, double trainerCpus,
      double trainerGpus) {
    Placement {
      workerResources = Map.copyOf(workerResources);
      trainerResources = Map.copyOf(trainerResources);
    }

    static Placement of(RunConfig config) {
      boolean python = config.pythonWorkers();
      // GPUs for the generation workers' own engines, or for the vLLM server each launches on its node
      boolean gpuGeneration = config.pythonGeneration() || config.get(Keys.LAUNCH).equals(Keys.LAUNCH_VLLM);
      return new Placement(strategy(config.get(Keys.PLACEMENT)), config.get(Keys.GENERATION_NUM_CPUS),
          gpuGeneration ? config.get(Keys.GENERATION_NUM_GPUS) : 0.0,
          Keys.resources(Keys.GENERATION_RESOURCES, config.get(Keys.GENERATION_RESOURCES)),
          Keys.resources(Keys.TRAINER_RESOURCES, config.get(Keys.TRAINER_RESOURCES)),
          strategy(config.get(Keys.TRAINER_PLACEMENT)), config.get(Keys.TRAINER_NUM_CPUS),
          python ? config.get(Keys.TRAINER_NUM_GPUS) : 0.0);
    }

    private static PlacementStrategy strategy(String name) {
      return name.equals(Keys.PLACEMENT_NONE) ? null : PlacementStrategy.valueOf(name.toUpperCase(Locale.ROOT));
    }
  }

  /**
   * How rewards are computed.
   *
   * @param workers reward actors sharing each batch ({@code reward.workers})
   * @param onError {@code fail} or {@code zero} ({@code reward.on_error}; Python reward functions)
   * @param timeoutSeconds the longest a reward function's call may take (0: no limit)
   * @param javaClass the Java runtime's {@code RewardFunction} ({@code reward.class}; empty: the task's reward)
   */
  record Reward(int workers, String onError, double timeoutSeconds, String javaClass) {}

  /**
   * A run on your data: the prepared prompts and the reward function that scores them.
   *
   * @param prepared the prompts, rendered and tokenized by the model's tokenizer
   * @param modelPath the checkpoint whose tokenizer the reward environment decodes completions with
   * @param rewardCodePath folders searched first for the reward function's module
   */
  record Data(PreparedData prepared, String modelPath, java.util.List<String> rewardCodePath, Evaluation eval) {}

  /** The longest prompt of the task ({@code "a+b="}), plus headroom, for the Python model's positions. */
  static final int MAX_PROMPT_TOKENS = 8;

  /**
   * How the Python workers run.
   *
   * @param model the policy's transformers config
   * @param engine {@code transformers} or {@code vllm}
   * @param generationGpus GPUs per generation worker
   * @param trainerGpus GPUs of the trainer
   * @param generationDevice {@code auto}, {@code cpu} or {@code cuda}
   * @param trainerDevice the same for the trainer
   * @param trainers the trainer ranks ({@code trainer.workers}): 1 trains alone
   * @param strategy how a group of ranks holds the policy ({@code trainer.strategy})
   * @param generation whether the generation workers are Python too; false for Java workers that are only the HTTP
   *     clients of inference servers loading the trainer's weights files ({@link #weightsFiles()})
   */
  record Python(PythonModel model, String engine, double generationGpus, double trainerGpus,
      String generationDevice, String trainerDevice, int trainers, String strategy, boolean generation) {}

  /**
   * Whether refits pass the Python trainer's weights as a file the inference servers load themselves (Java HTTP
   * clients beside the Python trainer) rather than as an object in Ray's object store.
   */
  boolean weightsFiles() {
    return python != null && !python.generation();
  }

  static GrpoSettings from(RunConfig config) {
    return from(config, null);
  }

  /** The settings of {@code config}, on {@code prepared} data when not null. */
  static GrpoSettings from(RunConfig config, PreparedData prepared) {
    int steps = config.get(Keys.STEPS);
    int prompts = config.get(Keys.PROMPTS_PER_STEP);
    int groupSize = config.get(Keys.GROUP_SIZE);
    long seed = config.get(Keys.SEED);
    int maxNewTokens = config.get(Keys.MAX_NEW_TOKENS);
    SamplingParams sampling = SamplingParams.builder()
        .maxTokens(maxNewTokens)
        .temperature(config.get(Keys.TEMPERATURE))
        .topP(config.get(Keys.TOP_P))
        .seed(seed)
        .ignoreEos(config.get(Keys.IGNORE_EOS))
        .build();
    GrpoConfig grpo = GrpoConfig.builder()
        .groupSize(groupSize)
        .promptsPerStep(prompts)
        .clipEpsilonLow(config.clipEpsilonLow())
        .clipEpsilonHigh(config.clipEpsilonHigh())
        .clipRatioC(config.get(Keys.CLIP_RATIO_C))
        .klBeta(config.get(Keys.KL_BETA))
        .klEstimator(KlEstimator.parse(config.get(Keys.KL_ESTIMATOR)))
        .klInReward(config.get(Keys.KL_IN_REWARD))
        .lossType(LossType.parse(config.get(Keys.LOSS_TYPE)))
        .scaleRewards(RewardScale.parse(config.get(Keys.SCALE_REWARDS)))
        .advantageEps(config.get(Keys.ADVANTAGE_EPS))
        .filterZeroAdvantage(config.get(Keys.FILTER_ZERO_ADVANTAGE))
        .tisCap(config.get(Keys.TIS_CAP))
        .ppoEpochs(config.get(Keys.PPO_EPOCHS))
        .microBatchSize(config.get(Keys.MICRO_BATCH_SIZE))
        .weightDecay(config.get(Keys.WEIGHT_DECAY))
        .maxGradNorm(config.get(Keys.MAX_GRAD_NORM))
        .lrSchedule(LrSchedule.parse(config.get(Keys.LR_SCHEDULER)))
        .warmupSteps(config.get(Keys.WARMUP_STEPS))
        .totalSteps(steps)
        .maxNewTokens(maxNewTokens)
        .learningRate(config.get(Keys.LEARNING_RATE))
        .temperature(sampling.temperature()) // the loss takes log-probs at the temperature sampled at
        .seed(seed)
        .build();
    return new GrpoSettings(config.mode() == RunConfig.Mode.ASYNC, steps, prompts, groupSize, seed,
        config.get(Keys.MAX_TRAJECTORY_AGE_STEPS), config.get(Keys.CHECKPOINT_EVERY),
        config.get(Keys.WORKERS), config.get(Keys.KV_TOKEN_BUDGET),
        config.get(Keys.MAX_RUNNING_REQUESTS), config.get(Keys.MAX_CONCURRENCY), grpo,
        sampling, config.get(Keys.MODEL), adapterTagged(config.serverBackend(), config.telemetry().runId()),
        python(config, maxNewTokens, prepared),
        groupsPerCall(config.get(Keys.GROUPS_PER_CALL), prompts, config.get(Keys.WORKERS)),
        dev.ravel.workers.model.ModelSpec.tiny(CharTokenizer.arithmetic().vocabSize()).toBuilder()
            .hiddenDim(config.get(Keys.JAVA_HIDDEN)).embedDim(config.get(Keys.JAVA_EMBED)).build(),
        config.get(Keys.MAX_RESTARTS), prepared == null ? null
            : new Data(prepared, config.get(Keys.MODEL_PATH), config.get(Keys.REWARD_CODE_PATH),
                prepared.eval() == null || config.get(Keys.EVAL_EVERY) == 0 ? null
                    : new Evaluation(prepared.eval(), config.get(Keys.EVAL_EVERY), sampling.toBuilder()
                        .temperature(config.get(Keys.EVAL_TEMPERATURE)).build(), config.get(Keys.EVAL_SAMPLES),
                        config.get(Keys.EVAL_PASS_THRESHOLD))),
        new Reward(config.get(Keys.REWARD_WORKERS), config.get(Keys.REWARD_ON_ERROR),
            config.get(Keys.REWARD_TIMEOUT_S), config.get(Keys.REWARD_CLASS)),
        config.get(Keys.INFLIGHT_UPDATES),
        Placement.of(config), Math.round(config.get(Keys.NODE_LOSS_TIMEOUT_S) * 1000));
  }

  /**
   * {@code servers} with its weight adapters named by {@code runId} and this attempt (a resumed run's adapters are
   * not the interrupted attempt's, whose weights after its checkpoint may differ); null when there are none.
   */
  static ServerBackendSpec adapterTagged(ServerBackendSpec servers, String runId) {
    if (servers == null) {
      return null;
    }
    String attempt = Long.toString(java.util.concurrent.ThreadLocalRandom.current().nextLong(1L << 40), 36);
    return servers.withAdapterTag(runId.replaceAll("[^A-Za-z0-9._-]", "_") + "-" + attempt);
  }

  /** {@code configured} groups per call, or with 0 the fewest that give each worker one call per step. */
  static int groupsPerCall(int configured, int prompts, int workers) {
    return configured > 0 ? configured : Math.max(1, (prompts + workers - 1) / workers);
  }

  private static Python python(RunConfig config, int maxNewTokens, PreparedData prepared) {
    if (!config.pythonWorkers()) {
      return null;
    }
    PythonModel model = prepared == null
        ? config.pythonModel(CharTokenizer.arithmetic().vocabSize(), MAX_PROMPT_TOKENS + maxNewTokens)
        : config.pythonModel(2, 2).fromCheckpoint(config.get(Keys.MODEL_PATH), config.get(Keys.DTYPE),
            prepared.vocabSize(), prepared.maxPositions());
    return new Python(model, config.get(Keys.ENGINE), config.get(Keys.GENERATION_NUM_GPUS),
        config.get(Keys.TRAINER_NUM_GPUS), config.get(Keys.GENERATION_DEVICE), config.get(Keys.TRAINER_DEVICE),
        config.get(Keys.TRAINER_WORKERS), config.get(Keys.TRAINER_STRATEGY), config.pythonGeneration());
  }

  String mode() {
    return async ? RunConfig.Mode.ASYNC.configName() : RunConfig.Mode.SYNC.configName();
  }

  /** Whether weights are saved after step {@code step} (every {@link #checkpointEvery} steps, and the last). */
  boolean checkpointAfter(int step) {
    return (checkpointEvery > 0 && (step + 1) % checkpointEvery == 0) || step == steps - 1;
  }

  /** Whether {@code step} is the run's last. */
  boolean isLast(int step) {
    return step == steps - 1;
  }
}
