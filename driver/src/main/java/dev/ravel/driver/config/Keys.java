package dev.ravel.driver.config;

import static dev.ravel.driver.config.Key.BOOLEAN;
import static dev.ravel.driver.config.Key.INTEGER;
import static dev.ravel.driver.config.Key.LIST;
import static dev.ravel.driver.config.Key.LONG;
import static dev.ravel.driver.config.Key.NUMBER;
import static dev.ravel.driver.config.Key.STRING;
import static dev.ravel.driver.config.Key.any;
import static dev.ravel.driver.config.Key.atLeast;
import static dev.ravel.driver.config.Key.between;
import static dev.ravel.driver.config.Key.in;
import static dev.ravel.driver.config.Key.notBlank;
import static dev.ravel.driver.config.Key.notNegative;
import static dev.ravel.driver.config.Key.oneOf;
import static dev.ravel.driver.config.Key.seconds;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.workers.grpo.KlEstimator;
import dev.ravel.workers.grpo.LossType;
import dev.ravel.workers.grpo.LrSchedule;
import dev.ravel.workers.grpo.RewardScale;
import dev.ravel.workers.python.PythonModel;
import dev.ravel.workers.python.PythonWorkers;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Every key of a run config but telemetry's ({@link dev.ravel.telemetry.config.TelemetryConfig#KEYS}), one
 * constant each, grouped by section in the order the README documents them. A key is declared here once, with
 * its type, default, check and doc line; nothing else spells its name.
 */
public final class Keys {
  private Keys() {}

  private static final Map<String, List<Key<?>>> SECTIONS = new LinkedHashMap<>();

  private static <T> Key<T> key(String section, String name, Key.Type<T> type, T defaultValue, Key.Check<T> check,
      String doc) {
    Key<T> k = new Key<>(section, name, type, defaultValue, check, doc);
    SECTIONS.computeIfAbsent(section, s -> new ArrayList<>()).add(k);
    return k;
  }

  /** {@code generation.runtime}/{@code trainer.runtime}: Ravel's Java workers. */
  public static final String RUNTIME_JAVA = "java";
  /** {@code generation.runtime}/{@code trainer.runtime}: Ravel's Python workers (PyTorch, transformers, vLLM). */
  public static final String RUNTIME_PYTHON = "python";
  /** {@code generation.backend}: the embedded engine in each generation worker's JVM. */
  public static final String BACKEND_EMBEDDED = "embedded";
  /** {@code generation.backend}: inference servers speaking vLLM's OpenAI-compatible protocol. */
  public static final String BACKEND_OPENAI = "openai";

  private static final List<String> RUNTIMES = List.of(RUNTIME_JAVA, RUNTIME_PYTHON);

  /**
   * The resources of a {@code *.resources} value: {@code NAME=AMOUNT} each, in order.
   *
   * @throws ConfigException naming the key and the entry that is not a name and an amount above 0
   */
  public static Map<String, Double> resources(Key<List<String>> key, List<String> entries) {
    return resources(key.dotted(), entries);
  }

  private static Map<String, Double> resources(String key, List<String> entries) {
    Map<String, Double> out = new LinkedHashMap<>();
    for (String e : entries) {
      int eq = e.indexOf('=');
      String name = eq < 0 ? "" : e.substring(0, eq).strip();
      double amount;
      try {
        amount = eq < 0 ? Double.NaN : Double.parseDouble(e.substring(eq + 1).strip());
      } catch (NumberFormatException x) {
        amount = Double.NaN;
      }
      if (name.isEmpty() || !(amount > 0) || Double.isInfinite(amount)) {
        throw new ConfigException(key, "'" + e + "' is not NAME=AMOUNT with an amount above 0");
      }
      if (name.equals("CPU") || name.equals("GPU")) {
        throw new ConfigException(key, "'" + e + "': CPUs and GPUs are set by the num_cpus and num_gpus keys");
      }
      if (out.put(name, amount) != null) {
        throw new ConfigException(key, "resource '" + name + "' is given twice");
      }
    }
    return out;
  }

  private static Key.Check<List<String>> resources() {
    return (k, v) -> resources(k, v);
  }

  // ---- run ----

  /** {@code run.mode}: {@code sync} or {@code async} (read as {@link RunConfig#mode()}). */
  public static final Key<String> MODE = key("run", "mode", STRING, "sync", (k, v) -> {
    String m = v.toLowerCase(Locale.ROOT);
    if (!m.equals("sync") && !m.equals("async")) {
      throw new ConfigException(k, "unknown mode '" + m + "' (valid: sync, async)");
    }
  }, "`sync` (generate, then train, each step) or `async` (a collector generates ahead while the trainer trains)");
  /** {@code run.seed}. */
  public static final Key<Long> SEED = key("run", "seed", LONG, 7L, (k, v) -> {
    if (v < 0) {
      throw new ConfigException(k, "must be a whole number >= 0, got " + v);
    }
  }, "the run's seed: every step's batch and sampling seeds derive from it");

  // ---- cluster ----

  /** {@code cluster.address}. */
  public static final Key<String> ADDRESS = key("cluster", "address", STRING, "", any(),
      "a running cluster's GCS address (`host:port`); empty: `RAY_ADDRESS`, else a local head Ravel starts and stops");
  /** {@code cluster.num_cpus}. */
  public static final Key<Integer> NUM_CPUS = key("cluster", "num_cpus", INTEGER, 0, notNegative(),
      "CPUs of the local head Ravel starts (0: Ray counts them)");
  /** {@code cluster.worker_heap_mb}. */
  public static final Key<Integer> WORKER_HEAP_MB = key("cluster", "worker_heap_mb", INTEGER, 512, atLeast(64),
      "the Java workers' heap (`-Xmx`) in MiB");
  /** {@code cluster.max_restarts}. */
  public static final Key<Integer> MAX_RESTARTS = key("cluster", "max_restarts", INTEGER, 3, between(0, 100),
      "how often Ray restarts a generation worker or the reward environment whose process died; its calls are issued again");

  /** {@code cluster.code_search_path}. */
  public static final Key<List<String>> CODE_SEARCH_PATH = key("cluster", "code_search_path", LIST, List.of(),
      (k, v) -> {
        for (String p : v) {
          if (p.isBlank() || !java.nio.file.Files.exists(java.nio.file.Path.of(p))) {
            throw new ConfigException(k, "'" + p + "' does not exist (a jar, a class folder or a folder of Python"
                + " modules)");
          }
        }
      }, "your jars, class folders and folders of Python modules the workers need (a `reward.class` of yours, say),"
          + " after Ravel's own; on a cluster, paths every node has");
  /** {@code cluster.node_loss_timeout_s}. */
  public static final Key<Double> NODE_LOSS_TIMEOUT_S = key("cluster", "node_loss_timeout_s", NUMBER, 120.0,
      in(1, 86_400, true), "how long a call waits for a generation worker or reward environment whose process died"
          + " (its node lost, say) to be restarted on a node left; then the step fails naming it and where it ran");

  // ---- generation ----

  /** {@code generation.workers}. */
  public static final Key<Integer> WORKERS = key("generation", "workers", INTEGER, 2, atLeast(1),
      "generation workers (Ray actors)");
  /** {@code generation.backend}. */
  public static final Key<String> BACKEND = key("generation", "backend", STRING, BACKEND_EMBEDDED,
      oneOf("backend", List.of(BACKEND_EMBEDDED, BACKEND_OPENAI)),
      "`embedded` (Ravel's engine in each Java worker) or `openai` (vLLM-compatible HTTP servers)");
  /** {@code generation.placement}: no placement group; Ray places each generation worker. */
  public static final String PLACEMENT_NONE = "none";
  /** The {@code generation.placement} values, each but {@code none} a Ray placement strategy. */
  public static final List<String> PLACEMENTS = List.of(PLACEMENT_NONE, "pack", "spread", "strict_pack", "strict_spread");
  /** {@code generation.placement}. */
  public static final Key<String> PLACEMENT = key("generation", "placement", STRING, PLACEMENT_NONE,
      oneOf("placement", PLACEMENTS), "`none` (Ray places each worker), or a placement group with one bundle per"
          + " worker: `pack`, `spread` (over the nodes where it can; a dead node's bundles are placed again on the"
          + " nodes left), `strict_pack`, `strict_spread` (one node per worker, or the run does not start)");
  /** {@code generation.num_cpus}. */
  public static final Key<Double> GENERATION_NUM_CPUS = key("generation", "num_cpus", NUMBER, 1.0,
      in(0.01, 1024, true), "CPUs each generation worker's bundle holds (with `generation.placement` other than"
          + " `none`)");
  /** {@code generation.resources}. */
  public static final Key<List<String>> GENERATION_RESOURCES = key("generation", "resources", LIST, List.of(),
      resources(), "Ray resources each generation worker asks for, `NAME=AMOUNT` each (a custom resource pins the"
          + " workers to the nodes that declare it); with a placement group they go into each worker's bundle");
  /** {@code generation.kv_token_budget}. */
  public static final Key<Integer> KV_TOKEN_BUDGET = key("generation", "kv_token_budget", INTEGER, 4096, atLeast(1),
      "each embedded engine's KV-cache budget in tokens (a prompt plus its new tokens must fit)");
  /** {@code generation.max_running_requests}. */
  public static final Key<Integer> MAX_RUNNING_REQUESTS = key("generation", "max_running_requests", INTEGER, 64,
      atLeast(1), "each embedded engine's running batch bound");
  /** {@code generation.max_concurrency}. */
  public static final Key<Integer> MAX_CONCURRENCY = key("generation", "max_concurrency", INTEGER, 32, atLeast(1),
      "calls a generation worker serves at once");
  /** {@code generation.model}. */
  public static final Key<String> MODEL = key("generation", "model", STRING, "ravel-tiny", notBlank(),
      "the policy's name in engine spans and metrics, and the model asked of inference servers");
  /** {@code generation.servers}. */
  public static final Key<List<String>> SERVERS = key("generation", "servers", LIST, List.of(), any(),
      "backend `openai`: the servers' base URLs (`http://host:port`), shared over the workers");
  /** {@code generation.launch: vllm}: each worker launches {@code vllm serve} of {@code model.path}. */
  public static final String LAUNCH_VLLM = "vllm";
  /** {@code generation.launch}. */
  public static final Key<String> LAUNCH = key("generation", "launch", STRING, "",
      (key, v) -> { // empty, or one of the launches
        if (!v.isEmpty()) {
          oneOf("launch", List.of(dev.ravel.workers.generation.openai.ServerBackendSpec.LAUNCH_RAVEL, LAUNCH_VLLM))
              .check(key, v);
        }
      },
      "backend `openai`: `ravel` launches one `ravel serve` per worker; `vllm` one `vllm serve` of `model.path` with"
          + " Ravel's weight-transfer plugin (the Python trainer's weights)");
  /** {@code generation.vllm}. */
  public static final Key<String> VLLM = key("generation", "vllm", STRING, "vllm", notBlank(),
      "`launch: vllm`: the `vllm` command (a path, or a name on the workers' `PATH`) of an environment with vLLM and"
          + " Ravel's plugin (`scripts/setup-vllm-cpu.sh` makes one for the CPU)");
  /** {@code generation.launch_command}. */
  public static final Key<String> LAUNCH_COMMAND = key("generation", "launch_command", STRING, "", any(),
      "backend `openai`: a command each worker runs to launch its own server (must contain `{port}`)");
  /** {@code generation.connect_timeout_s}. */
  public static final Key<Double> CONNECT_TIMEOUT_S = key("generation", "connect_timeout_s", NUMBER, 5.0, seconds(),
      "backend `openai`: bound on opening a connection, in seconds");
  /** {@code generation.request_timeout_s}. */
  public static final Key<Double> REQUEST_TIMEOUT_S = key("generation", "request_timeout_s", NUMBER, 120.0, seconds(),
      "backend `openai`: bound on one completion request, in seconds");
  /** {@code generation.launch_timeout_s}. */
  public static final Key<Double> LAUNCH_TIMEOUT_S = key("generation", "launch_timeout_s", NUMBER, 60.0, seconds(),
      "backend `openai`: bound on a launched server becoming ready, in seconds");
  /** {@code generation.max_in_flight}. */
  public static final Key<Integer> MAX_IN_FLIGHT = key("generation", "max_in_flight", INTEGER, 64, atLeast(1),
      "backend `openai`: requests a worker has open at once");
  /** {@code generation.refit}. */
  public static final Key<Boolean> REFIT = key("generation", "refit", BOOLEAN, true, any(),
      "backend `openai`: push each step's weights to the servers");
  /** {@code generation.weight_sync}. */
  public static final Key<String> WEIGHT_SYNC = key("generation", "weight_sync", STRING,
      dev.ravel.workers.generation.openai.ServerBackendSpec.SYNC_NATIVE,
      oneOf("weight sync", dev.ravel.workers.generation.openai.ServerBackendSpec.WEIGHT_SYNCS),
      "backend `openai`: how weights reach the servers: `native` (vLLM's pause, start, update, finish, resume"
          + " routes; a weights file the servers read) or `lora` (vLLM's runtime LoRA routes, one adapter a version)");
  /** {@code generation.inflight_updates}. */
  public static final Key<Boolean> INFLIGHT_UPDATES = key("generation", "inflight_updates", BOOLEAN, false, any(),
      "async, Java workers: the collector does not drain at a refit; requests in flight go on under the new weights"
          + " (embedded engine; backend `openai`: `pause?mode=keep` instead of `mode=wait`), their tokens saying which"
          + " version sampled them");
  /** {@code generation.record_exchanges}. */
  public static final Key<Boolean> RECORD_EXCHANGES = key("generation", "record_exchanges", BOOLEAN, false, any(),
      "backend `openai`, `launch: ravel`: each server appends every HTTP exchange to"
          + " `inference-server-exchanges-*.jsonl` in the run folder (what a check against vLLM's own code replays)");
  /** {@code generation.server_heap_mb}. */
  public static final Key<Integer> SERVER_HEAP_MB = key("generation", "server_heap_mb", INTEGER, 256, atLeast(64),
      "backend `openai`, `launch: ravel`: each `ravel serve` JVM's heap in MiB");
  /** {@code generation.runtime}. */
  public static final Key<String> GENERATION_RUNTIME = key("generation", "runtime", STRING, RUNTIME_JAVA,
      oneOf("runtime", RUNTIMES), "`java` or `python` (the same as `trainer.runtime`, but for Java workers that are"
          + " only HTTP clients of vLLM servers, `backend: openai`, beside the Python trainer)");
  /** {@code generation.engine}. */
  public static final Key<String> ENGINE = key("generation", "engine", STRING, "transformers",
      oneOf("engine", PythonWorkers.ENGINES), "the Python workers' engine: `transformers` or `vllm` (untested: it has never run)");
  /** {@code generation.num_gpus}. */
  public static final Key<Double> GENERATION_NUM_GPUS = key("generation", "num_gpus", NUMBER, 0.0, in(0, 1024, true),
      "GPUs per generation worker (Ray's `GPU` resource)");
  /** {@code generation.device}. */
  public static final Key<String> GENERATION_DEVICE = key("generation", "device", STRING, "auto",
      oneOf("device", PythonWorkers.DEVICES), "`auto` (CUDA when the actor sees a GPU), `cpu` or `cuda` (CUDA untested: no test has run on a GPU)");
  /** {@code generation.ignore_eos}. */
  public static final Key<Boolean> IGNORE_EOS = key("generation", "ignore_eos", BOOLEAN, false, any(),
      "every completion runs to `grpo.max_new_tokens` (vLLM's `ignore_eos`: the same work whatever is learnt)");

  // ---- trainer ----

  /** {@code trainer.runtime}. */
  public static final Key<String> TRAINER_RUNTIME = key("trainer", "runtime", STRING, RUNTIME_JAVA,
      oneOf("runtime", RUNTIMES), "`java` or `python` (the same as `generation.runtime`)");
  /** {@code trainer.num_gpus}. */
  public static final Key<Double> TRAINER_NUM_GPUS = key("trainer", "num_gpus", NUMBER, 0.0, in(0, 1024, true),
      "GPUs of the trainer");
  /** {@code trainer.resources}. */
  public static final Key<List<String>> TRAINER_RESOURCES = key("trainer", "resources", LIST, List.of(),
      resources(), "Ray resources the trainer asks for, `NAME=AMOUNT` each (a custom resource pins it to the nodes"
          + " that declare it); the replay buffer and the collector, which are not restarted either, go with it");
  /** {@code trainer.workers}. */
  public static final Key<Integer> TRAINER_WORKERS = key("trainer", "workers", INTEGER, 1, atLeast(1),
      "Python trainer ranks that take each update together with torch.distributed (`gloo` on CPU, `nccl` on CUDA: untested),"
          + " each on its shard of the batch (its log-probs too), the gradients summed: the update equals one trainer's;"
          + " how they hold the policy is `trainer.strategy`; rank 0 publishes the weights and writes the checkpoints"
          + " (every rank gives its shard); place them with `trainer.placement`");
  /** {@code trainer.strategy}. */
  public static final Key<String> TRAINER_STRATEGY = key("trainer", "strategy", STRING,
      PythonWorkers.TRAINER_STRATEGIES.get(0), oneOf("strategy", PythonWorkers.TRAINER_STRATEGIES),
      "how a trainer group (`trainer.workers` > 1) holds the policy: `fsdp2` shards its parameters, gradients and"
          + " AdamW state over the ranks (PyTorch's `fully_shard`, per transformer block; the reference model too), so"
          + " each rank holds about 1/N of them; `ddp` keeps a whole copy on every rank (`DistributedDataParallel`)");
  /** {@code trainer.placement}. */
  public static final Key<String> TRAINER_PLACEMENT = key("trainer", "placement", STRING, PLACEMENT_NONE,
      oneOf("placement", PLACEMENTS), "the trainer ranks' placement group, one bundle per rank, as"
          + " `generation.placement` (`strict_spread`: one node per rank)");
  /** {@code trainer.num_cpus}. */
  public static final Key<Double> TRAINER_NUM_CPUS = key("trainer", "num_cpus", NUMBER, 1.0, in(0.01, 1024, true),
      "CPUs each trainer rank's bundle holds (with `trainer.placement` other than `none`)");
  /** {@code trainer.device}. */
  public static final Key<String> TRAINER_DEVICE = key("trainer", "device", STRING, "auto",
      oneOf("device", PythonWorkers.DEVICES), "`auto`, `cpu` or `cuda`, as `generation.device`");

  /** {@code trainer.micro_batch_size}. */
  public static final Key<Integer> MICRO_BATCH_SIZE = key("trainer", "micro_batch_size", INTEGER, 0, notNegative(),
      "sequences per gradient-accumulation micro-batch; must divide the step's batch (`grpo.prompts_per_step` x"
          + " `grpo.group_size`); the update equals one full-batch step (0: the whole batch at once)");
  /** {@code trainer.weight_decay}. */
  public static final Key<Double> WEIGHT_DECAY = key("trainer", "weight_decay", NUMBER, 0.0, in(0, 10, true),
      "AdamW's decoupled weight decay");
  /** {@code trainer.max_grad_norm}. */
  public static final Key<Double> MAX_GRAD_NORM = key("trainer", "max_grad_norm", NUMBER, 1.0, in(0, 1e9, true),
      "the gradient is clipped to this global L2 norm before each optimizer step (0: no clipping); the norm before"
          + " clipping is reported");
  /** {@code trainer.lr_scheduler}. */
  public static final Key<String> LR_SCHEDULER = key("trainer", "lr_scheduler", STRING,
      LrSchedule.CONSTANT.configName(), oneOf("scheduler", names(LrSchedule.values(), LrSchedule::configName)),
      "`constant`, `linear` (to 0) or `cosine` (to 0) over the run's optimizer steps, after the warmup"
          + " (transformers' `get_*_schedule_with_warmup`)");
  /** {@code trainer.warmup_steps}. */
  public static final Key<Integer> WARMUP_STEPS = key("trainer", "warmup_steps", INTEGER, 0, notNegative(),
      "steps of linear warmup from 0 at the start of `trainer.lr_scheduler` (at most `grpo.steps`)");

  // ---- model ----

  /** {@code model.family}. */
  public static final Key<String> FAMILY = key("model", "family", STRING, "gpt2",
      oneOf("family", PythonModel.FAMILIES), "the Python policy's transformers family: `gpt2` or `qwen2`");
  /** {@code model.layers}. */
  public static final Key<Integer> LAYERS = key("model", "layers", INTEGER, 2, atLeast(1),
      "the Python policy's transformer blocks");
  /** {@code model.hidden}. */
  public static final Key<Integer> HIDDEN = key("model", "hidden", INTEGER, 128, atLeast(1),
      "the Python policy's hidden size (a multiple of `model.heads`)");
  /** {@code model.heads}. */
  public static final Key<Integer> HEADS = key("model", "heads", INTEGER, 4, atLeast(1),
      "the Python policy's attention heads");
  /** {@code model.java_hidden}. */
  public static final Key<Integer> JAVA_HIDDEN = key("model", "java_hidden", INTEGER, 64, atLeast(1),
      "the Java runtime's TinyLm: hidden units");
  /** {@code model.java_embed}. */
  public static final Key<Integer> JAVA_EMBED = key("model", "java_embed", INTEGER, 16, atLeast(1),
      "the Java runtime's TinyLm: embedding width");

  /** {@code model.path}. */
  public static final Key<String> MODEL_PATH = key("model", "path", STRING, "", any(),
      "your model: a Hugging Face checkpoint folder (`config.json`, safetensors, tokenizer), loaded offline by the"
          + " trainer, its reference and every generation worker (empty: a random `model.family` model)");
  /** {@code model.dtype}. */
  public static final Key<String> DTYPE = key("model", "dtype", STRING, "auto",
      oneOf("dtype", List.of("auto", "float32", "bfloat16", "float16")),
      "`model.path`'s dtype: `auto` (bfloat16 on CUDA, untested; float32 on the CPU), `float32`, `bfloat16` or `float16`");

  // ---- data ----

  /** {@code data.train}. */
  public static final Key<List<String>> TRAIN = key("data", "train", LIST, List.of(), any(),
      "your prompts: JSON Lines or Parquet files, or `save_to_disk` folders (empty: the built-in digit sums)");
  /** {@code data.eval}. */
  public static final Key<List<String>> EVAL = key("data", "eval", LIST, List.of(), any(),
      "held-out prompts in the same forms as `data.train`, generated and scored every `grpo.eval_every` steps");
  /** {@code data.prompt_key}. */
  public static final Key<String> PROMPT_KEY = key("data", "prompt_key", STRING, "prompt", notBlank(),
      "the field holding a row's prompt: text, or a list of chat messages (`{role, content}`)");
  /** {@code data.answer_key}. */
  public static final Key<String> ANSWER_KEY = key("data", "answer_key", STRING, "answer", any(),
      "the field holding a row's reference answer, given to the reward (empty: rows have none)");
  /** {@code data.chat_template}. */
  public static final Key<Boolean> CHAT_TEMPLATE = key("data", "chat_template", BOOLEAN, false, any(),
      "render prompts with the tokenizer's chat template (`add_generation_prompt`)");
  /** {@code data.system_prompt}. */
  public static final Key<String> SYSTEM_PROMPT = key("data", "system_prompt", STRING, "", any(),
      "a system message before every prompt (with the chat template), or text before it (without)");
  /** {@code data.long_prompts}. */
  public static final Key<String> LONG_PROMPTS = key("data", "long_prompts", STRING, "drop",
      oneOf("policy", List.of("drop", "truncate_left")),
      "prompts over `grpo.max_prompt_tokens`: `drop` them or `truncate_left`; either way counted and reported");

  // ---- reward ----

  /** {@code reward.function}. */
  public static final Key<String> REWARD_FUNCTION = key("reward", "function", STRING, "", any(),
      "with `data.train`: `exact_match`, `math` (last number or `\\boxed{}`, by math-verify) or"
          + " `package.module:function` (called with prompts, completions, answers, metadata, step); empty: `exact_match`");
  /** {@code reward.code_path}. */
  public static final Key<List<String>> REWARD_CODE_PATH = key("reward", "code_path", LIST, List.of(), any(),
      "folders searched first for `reward.function`'s module");
  /** {@code reward.class}. */
  public static final Key<String> REWARD_CLASS = key("reward", "class", STRING, "", any(),
      "the Java runtime's reward: a class implementing `dev.ravel.workers.reward.RewardFunction` (public, with a public"
          + " no-argument constructor) on the workers' classpath, called with the decoded completions (empty: the"
          + " built-in digit task's)");
  /** {@code reward.on_error}. */
  public static final Key<String> REWARD_ON_ERROR = key("reward", "on_error", STRING,
      dev.ravel.workers.reward.RewardEnvironment.ON_ERROR.get(0),
      oneOf("policy", dev.ravel.workers.reward.RewardEnvironment.ON_ERROR),
      "when `reward.function` raises: `fail` the step with its type and message, or score the call's completions"
          + " `zero` and count them (`rewards.failed` in `steps.jsonl`)");
  /** {@code reward.timeout_s}. */
  public static final Key<Double> REWARD_TIMEOUT_S = key("reward", "timeout_s", NUMBER, 300.0, in(0, 86_400, true),
      "a call of `reward.function` that takes longer fails the step naming the function (0: no limit)");
  /** {@code reward.workers}. */
  public static final Key<Integer> REWARD_WORKERS = key("reward", "workers", INTEGER, 1, atLeast(1),
      "reward actors; each scores a contiguous share of every batch at once (for expensive rewards)");

  // ---- eval ----

  /** {@code eval.temperature}. */
  public static final Key<Double> EVAL_TEMPERATURE = key("eval", "temperature", NUMBER, 0.0, in(0, 10, true),
      "sampling temperature of the eval set's completions (0: greedy)");
  /** {@code eval.samples}. */
  public static final Key<Integer> EVAL_SAMPLES = key("eval", "samples", INTEGER, 1, atLeast(1),
      "completions per eval prompt");
  /** {@code eval.pass_threshold}. */
  public static final Key<Double> EVAL_PASS_THRESHOLD = key("eval", "pass_threshold", NUMBER, 1.0, any(),
      "a completion with at least this reward counts as correct in the eval accuracy");

  // ---- grpo ----

  /** {@code grpo.steps}. */
  public static final Key<Integer> STEPS = key("grpo", "steps", INTEGER, 30, atLeast(1), "training steps");
  /** {@code grpo.prompts_per_step}. */
  public static final Key<Integer> PROMPTS_PER_STEP = key("grpo", "prompts_per_step", INTEGER, 32, atLeast(1),
      "prompts (groups) per step");
  /** {@code grpo.group_size}. */
  public static final Key<Integer> GROUP_SIZE = key("grpo", "group_size", INTEGER, 8, (k, v) -> {
    if (v < 2) {
      throw new ConfigException(k, "must be at least 2 (advantages are relative to the group)");
    }
  }, "completions per prompt (G); advantages are relative to the group");
  /** {@code grpo.learning_rate}. */
  public static final Key<Double> LEARNING_RATE = key("grpo", "learning_rate", NUMBER, 0.03, in(0, 10, false),
      "the optimiser's learning rate");
  /** {@code grpo.clip_epsilon}. */
  public static final Key<Double> CLIP_EPSILON = key("grpo", "clip_epsilon", NUMBER, 0.2, in(0, 1, false),
      "the PPO-style ratio clip (epsilon), both sides unless `grpo.clip_epsilon_low`/`_high` are set");
  /** {@code grpo.kl_beta}. */
  public static final Key<Double> KL_BETA = key("grpo", "kl_beta", NUMBER, 0.04, in(0, 100, true),
      "the weight of the KL penalty against the reference policy (beta)");
  /** {@code grpo.loss_type}. */
  public static final Key<String> LOSS_TYPE = key("grpo", "loss_type", STRING, LossType.GRPO.configName(),
      oneOf("loss type", names(LossType.values(), LossType::configName)),
      "how token objectives become the loss: `grpo` (token mean per sequence, then mean; DeepSeekMath), `bnpo`"
          + " (token mean per micro-batch; TRL's), `dr_grpo` (token sum / (batch x `grpo.max_new_tokens`); Dr. GRPO),"
          + " `dapo` (token mean over the step's batch; DAPO)");
  /** {@code grpo.scale_rewards}. */
  public static final Key<String> SCALE_REWARDS = key("grpo", "scale_rewards", STRING, RewardScale.GROUP.configName(),
      oneOf("scale", names(RewardScale.values(), RewardScale::configName)),
      "what a reward's distance to its group mean is divided by: `group` (the group's std; GRPO), `batch` (the"
          + " batch's std), `none` (Dr. GRPO)");
  /** {@code grpo.advantage_eps}. */
  public static final Key<Double> ADVANTAGE_EPS = key("grpo", "advantage_eps", NUMBER, 1e-6, in(0, 1, false),
      "added to the standard deviation advantages are divided by");
  /** {@code grpo.filter_zero_advantage}. */
  public static final Key<Boolean> FILTER_ZERO_ADVANTAGE = key("grpo", "filter_zero_advantage", BOOLEAN, false,
      any(), "leave groups whose rewards are all equal out of the update, normaliser included (DAPO's dynamic"
          + " sampling without its resampling: the batch shrinks); they are counted either way");
  /** {@code grpo.clip_epsilon_low}. */
  public static final Key<Double> CLIP_EPSILON_LOW = key("grpo", "clip_epsilon_low", NUMBER, 0.0, in(0, 1, true),
      "ratios below 1 - this are clipped (0: `grpo.clip_epsilon`)");
  /** {@code grpo.clip_epsilon_high}. */
  public static final Key<Double> CLIP_EPSILON_HIGH = key("grpo", "clip_epsilon_high", NUMBER, 0.0, in(0, 10, true),
      "ratios above 1 + this are clipped (0: `grpo.clip_epsilon`); DAPO's clip-higher sets it above the low one"
          + " (0.28)");
  /** {@code grpo.clip_ratio_c}. */
  public static final Key<Double> CLIP_RATIO_C = key("grpo", "clip_ratio_c", NUMBER, 0.0, (k, v) -> {
    if (v != 0 && !(v > 1 && v <= 1e6)) {
      throw new ConfigException(k, "must be 0 (off) or above 1, got " + v);
    }
  }, "dual clip for negative advantages: the objective is at least this x the advantage (0: off; verl uses 3)");
  /** {@code grpo.kl_estimator}. */
  public static final Key<String> KL_ESTIMATOR = key("grpo", "kl_estimator", STRING, KlEstimator.K3.configName(),
      oneOf("estimator", names(KlEstimator.values(), KlEstimator::configName)),
      "the KL estimator: `k1`, `k2`, `k3` (Schulman's) or `low_var_kl` (k3 clamped to 10, verl's)");
  /** {@code grpo.kl_in_reward}. */
  public static final Key<Boolean> KL_IN_REWARD = key("grpo", "kl_in_reward", BOOLEAN, false, any(),
      "take `grpo.kl_beta` x the completion's KL (behaviour against reference) from its reward instead of adding the"
          + " penalty to the loss");
  /** {@code grpo.ppo_epochs}. */
  public static final Key<Integer> PPO_EPOCHS = key("grpo", "ppo_epochs", INTEGER, 1, between(1, 100),
      "passes over each step's batch, one optimizer step each, the ratio against the behaviour log-probs each time"
          + " (TRL's `num_iterations`)");
  /** {@code grpo.tis_cap}. */
  public static final Key<Double> TIS_CAP = key("grpo", "tis_cap", NUMBER, 0.0, in(0, 1e6, true),
      "truncated importance sampling for async lag: the ratio is taken against the trainer's log-probs at the step's"
          + " start and each token weighted by min(pi_old / pi_behaviour, this) (0: off; verl and NeMo-RL use 2)");
  /** {@code grpo.temperature}. */
  public static final Key<Double> TEMPERATURE = key("grpo", "temperature", NUMBER, 1.0, in(0, 10, false),
      "sampling temperature (above 0: at 0 a group's samples are all the same and carry no signal)");
  /** {@code grpo.top_p}. */
  public static final Key<Double> TOP_P = key("grpo", "top_p", NUMBER, 1.0, in(0, 1, false),
      "nucleus sampling's top-p");
  /** {@code grpo.max_new_tokens}. */
  public static final Key<Integer> MAX_NEW_TOKENS = key("grpo", "max_new_tokens", INTEGER, 4, atLeast(1),
      "tokens generated per completion at most");
  /** {@code grpo.max_prompt_tokens}. */
  public static final Key<Integer> MAX_PROMPT_TOKENS = key("grpo", "max_prompt_tokens", INTEGER, 256, atLeast(1),
      "with `data.train`: the longest prompt in tokens (see `data.long_prompts`)");
  /** {@code grpo.eval_every}. */
  public static final Key<Integer> EVAL_EVERY = key("grpo", "eval_every", INTEGER, 0, notNegative(),
      "evaluate `data.eval` at step 1 and every this many steps after, with the weights the step serves (0: never)");
  /** {@code grpo.max_trajectory_age_steps}. */
  public static final Key<Integer> MAX_TRAJECTORY_AGE_STEPS = key("grpo", "max_trajectory_age_steps", INTEGER, 1,
      (k, v) -> {
        if (v < 0) {
          throw new ConfigException(k, "must not be negative");
        }
      }, "async: how many weight versions older than the step a trajectory may be (older ones are dropped, counted)");
  /** {@code grpo.checkpoint_every}. */
  public static final Key<Integer> CHECKPOINT_EVERY = key("grpo", "checkpoint_every", INTEGER, 0, (k, v) -> {
    if (v < 0) {
      throw new ConfigException(k, "must not be negative");
    }
  }, "save weights every this many steps (0: only after the last step)");
  /** {@code grpo.groups_per_call}. */
  public static final Key<Integer> GROUPS_PER_CALL = key("grpo", "groups_per_call", INTEGER, 0, (k, v) -> {
    if (v < 0) {
      throw new ConfigException(k, "must not be negative (0: a step's groups split evenly over the generation workers)");
    }
  }, "groups per generate call (0: a step's groups split evenly over the generation workers)");

  private static <E> List<String> names(E[] values, java.util.function.Function<E, String> name) {
    return java.util.Arrays.stream(values).map(name).toList();
  }

  /** The sections and their keys, in documented order (telemetry, kept by telemetry-core, is not among them). */
  public static Map<String, List<Key<?>>> sections() {
    Map<String, List<Key<?>>> out = new LinkedHashMap<>();
    SECTIONS.forEach((s, keys) -> out.put(s, Collections.unmodifiableList(keys)));
    return Collections.unmodifiableMap(out);
  }

  /** Every key, in documented order. */
  public static List<Key<?>> all() {
    List<Key<?>> out = new ArrayList<>();
    SECTIONS.values().forEach(out::addAll);
    return List.copyOf(out);
  }

  /**
   * The README's reference of these keys: one Markdown table per section (key, default, doc line), as
   * {@code KeysDocsTest} checks it stands in the README.
   */
  public static String markdown() {
    StringBuilder out = new StringBuilder();
    sections().forEach((section, keys) -> {
      out.append("\n**`").append(section).append("`**\n\n| key | default | meaning |\n|---|---|---|\n");
      for (Key<?> k : keys) {
        out.append("| `").append(k.dotted()).append("` | ").append(shown(k.defaultValue())).append(" | ")
            .append(k.doc()).append(" |\n");
      }
    });
    return out.toString();
  }

  private static String shown(Object value) {
    if (value instanceof String s) {
      return s.isEmpty() ? "empty" : "`" + s + "`";
    }
    if (value instanceof List<?> l) {
      return l.isEmpty() ? "`[]`" : "`" + l + "`";
    }
    if (value instanceof Double d && d == Math.rint(d) && !d.isInfinite()) {
      return "`" + (long) (double) d + "`";
    }
    if (value instanceof Double d) {
      return "`" + java.math.BigDecimal.valueOf(d).stripTrailingZeros().toPlainString() + "`";
    }
    return "`" + value + "`";
  }
}
