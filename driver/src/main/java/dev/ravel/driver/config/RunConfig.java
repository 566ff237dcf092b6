package dev.ravel.driver.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.workers.generation.openai.ServerBackendSpec;
import dev.ravel.workers.python.PythonModel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A run config: a YAML file of sections ({@code run}, {@code cluster}, {@code generation}, {@code grpo},
 * {@code telemetry}) plus command-line overrides in dotted form ({@code grpo.steps=5}). Every key is known
 * in advance: an unknown section or key, in the file or in an override, is an error naming it, and so is
 * a value of the wrong type or out of range. Precedence: defaults, then the file, then
 * {@code RAVEL_TELEMETRY_*} from the environment, then the command line. Immutable.
 */
public final class RunConfig {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  /** {@code generation.runtime}/{@code trainer.runtime}: Ravel's Java workers. */
  public static final String RUNTIME_JAVA = Keys.RUNTIME_JAVA;
  /** {@code generation.runtime}/{@code trainer.runtime}: Ravel's Python workers (PyTorch, transformers, vLLM). */
  public static final String RUNTIME_PYTHON = Keys.RUNTIME_PYTHON;

  /** Each key's value, converted and checked once (every key of {@link Keys}, in its order). */
  private final Map<Key<?>, Object> values;
  private final TelemetryConfig telemetry;
  private final Path source;

  private RunConfig(Map<Key<?>, Object> values, TelemetryConfig telemetry, Path source) {
    this.values = values;
    this.telemetry = telemetry;
    this.source = source;
    validate();
  }

  /** Reads {@code file} (may be null for defaults only), applies {@code overrides} and the environment. */
  public static RunConfig load(Path file, List<String> overrides, Map<String, String> env) {
    Map<String, Object> root = new LinkedHashMap<>();
    if (file != null) {
      if (!Files.isRegularFile(file)) {
        throw new ConfigException(file.toString(), "config file not found");
      }
      try (JsonParser p = YAML.createParser(file.toFile())) {
        // an empty or comment-only file has no token at all: most likely the wrong file, so say so (no file at all
        // runs every default)
        Object parsed = p.nextToken() == null ? null : YAML.readValue(p, Object.class);
        if (parsed == null) {
          throw new ConfigException(file.toString(), "the config file is empty: give at least one section (for"
              + " example grpo: {steps: 5}), or no file for every default");
        }
        if (parsed != null && !(parsed instanceof Map)) {
          throw new ConfigException(file.toString(), "expected a mapping of sections at the top level");
        }
        if (parsed != null) {
          @SuppressWarnings("unchecked")
          Map<String, Object> m = (Map<String, Object>) parsed;
          root.putAll(m);
        }
      } catch (JsonProcessingException e) {
        throw yamlError(file, e);
      } catch (IOException e) {
        throw new ConfigException(file.toString(), "cannot read: " + e.getMessage());
      }
    }
    Map<Key<?>, Object> given = new LinkedHashMap<>();
    Map<String, Object> telemetrySection = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : root.entrySet()) {
      String name = e.getKey();
      Object body = e.getValue();
      if (body == null) {
        continue;
      }
      if (!(body instanceof Map<?, ?> m)) {
        throw new ConfigException(name, "expected a section (a mapping of keys)");
      }
      for (Map.Entry<?, ?> kv : m.entrySet()) {
        put(given, telemetrySection, name + "." + kv.getKey(), kv.getValue());
      }
    }
    Map<String, String> telemetryEnv = new LinkedHashMap<>(env);
    for (String o : overrides) {
      int eq = o.indexOf('=');
      if (eq <= 0) {
        throw new ConfigException(o, "an override has the form section.key=value");
      }
      String key = o.substring(0, eq).trim();
      put(given, telemetrySection, key, scalar(o.substring(eq + 1)));
      if (key.startsWith("telemetry.")) {
        // the command line is the most explicit: it beats RAVEL_TELEMETRY_* from the environment
        telemetryEnv.remove(TelemetryConfig.ENV_PREFIX + key.substring("telemetry.".length()).toUpperCase(Locale.ROOT));
      }
    }
    Map<Key<?>, Object> merged = new LinkedHashMap<>();
    for (Key<?> k : Keys.all()) {
      merged.put(k, given.containsKey(k) ? k.read(given.get(k)) : k.defaultValue());
    }
    TelemetryConfig telemetry = TelemetryConfig.fromMap(telemetrySection, telemetryEnv);
    return new RunConfig(merged, telemetry, file);
  }

  private static void put(Map<Key<?>, Object> given, Map<String, Object> telemetry, String dotted,
      Object value) {
    int dot = dotted.indexOf('.');
    if (dot <= 0 || dot == dotted.length() - 1) {
      throw new ConfigException(dotted, "expected section.key (sections: " + sectionNames() + ")");
    }
    String section = dotted.substring(0, dot);
    String key = dotted.substring(dot + 1);
    if (section.equals("telemetry")) {
      if (!TelemetryConfig.KEYS.contains(key)) {
        throw new ConfigException(dotted, "unknown key (valid: " + String.join(", ", TelemetryConfig.KEYS) + ")");
      }
      telemetry.put(key, value);
      return;
    }
    List<Key<?>> keys = Keys.sections().get(section);
    if (keys == null) {
      throw new ConfigException(dotted, "unknown section '" + section + "' (valid: " + sectionNames() + ")");
    }
    Key<?> k = keys.stream().filter(x -> x.name().equals(key)).findFirst().orElseThrow(() ->
        new ConfigException(dotted, "unknown key (valid: "
            + String.join(", ", keys.stream().map(Key::name).toList()) + ")"));
    given.put(k, value);
  }

  private static String sectionNames() {
    List<String> names = new ArrayList<>(Keys.sections().keySet());
    names.add("telemetry");
    return String.join(", ", names);
  }

  private static final java.util.regex.Pattern INTEGER = java.util.regex.Pattern.compile("-?(0|[1-9][0-9]*)");
  private static final java.util.regex.Pattern DECIMAL =
      java.util.regex.Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?");

  /**
   * An override's value: {@code true}/{@code false} a boolean, a plain decimal number a number, anything
   * else the text as it is (so {@code run_id=0123} stays {@code "0123"} and {@code off} stays {@code "off"}).
   */
  static Object scalar(String text) {
    String t = text.trim();
    if (t.equals("true") || t.equals("false")) {
      return Boolean.valueOf(t);
    }
    if (INTEGER.matcher(t).matches()) {
      try {
        long v = Long.parseLong(t);
        return v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE ? (Object) (int) v : (Object) v;
      } catch (NumberFormatException e) {
        return t;
      }
    }
    if (DECIMAL.matcher(t).matches()) {
      return Double.valueOf(t);
    }
    return t;
  }

  /**
   * A YAML syntax error as one line: {@code file:line:column: not valid YAML: problem} (SnakeYAML's own message
   * spans several lines, with the offending line quoted).
   */
  static ConfigException yamlError(Path file, JsonProcessingException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof org.yaml.snakeyaml.error.MarkedYAMLException m && m.getProblemMark() != null) {
        org.yaml.snakeyaml.error.Mark at = m.getProblemMark();
        String problem = m.getProblem() == null ? "syntax error" : m.getProblem();
        String context = m.getContext() == null ? "" : " (" + m.getContext() + ")";
        return new ConfigException(file + ":" + (at.getLine() + 1) + ":" + (at.getColumn() + 1),
            "not valid YAML: " + oneLine(problem) + oneLine(context));
      }
    }
    String where = e.getLocation() == null ? file.toString()
        : file + ":" + e.getLocation().getLineNr() + ":" + e.getLocation().getColumnNr();
    return new ConfigException(where, "not valid YAML: " + oneLine(e.getOriginalMessage()));
  }

  private static String oneLine(String s) {
    return s.replaceAll("\\s*\\n\\s*", " ").strip();
  }

  /** The checks that span keys (each key's own check ran as it was read). */
  private void validate() {
    // a request holds its prompt and every new token in the engine's KV budget: one that cannot fit is
    // never admitted, so say so now rather than from inside a worker after the head started
    int prompt = promptTokens();
    int needed = prompt + get(Keys.MAX_NEW_TOKENS);
    if (get(Keys.KV_TOKEN_BUDGET) < needed) {
      throw new ConfigException(Keys.KV_TOKEN_BUDGET.dotted(), get(Keys.KV_TOKEN_BUDGET)
          + " tokens cannot hold one request: a prompt (" + prompt + " tokens) plus " + Keys.MAX_NEW_TOKENS + " ("
          + get(Keys.MAX_NEW_TOKENS) + ") needs " + needed);
    }
    if (get(Keys.GROUPS_PER_CALL) > get(Keys.PROMPTS_PER_STEP)) {
      throw new ConfigException(Keys.GROUPS_PER_CALL.dotted(), get(Keys.GROUPS_PER_CALL)
          + " is more than " + Keys.PROMPTS_PER_STEP + " (" + get(Keys.PROMPTS_PER_STEP) + ")");
    }
    if (get(Keys.BACKEND).equals(BACKEND_OPENAI)) {
      serverBackend();
    }
    validateRuntimes();
    validateData();
    validateOptimisation();
  }

  /** The GRPO and optimiser keys that hold together: the clip range, micro-batches and warmup. */
  private void validateOptimisation() {
    if (clipEpsilonHigh() < clipEpsilonLow()) {
      throw new ConfigException(Keys.CLIP_EPSILON_HIGH.dotted(), clipEpsilonHigh() + " is below the lower clip "
          + clipEpsilonLow() + " (" + (get(Keys.CLIP_EPSILON_LOW) == 0 ? Keys.CLIP_EPSILON : Keys.CLIP_EPSILON_LOW)
          + "): the upper clip must be at least the lower one");
    }
    int batch = get(Keys.PROMPTS_PER_STEP) * get(Keys.GROUP_SIZE);
    int micro = get(Keys.MICRO_BATCH_SIZE);
    if (micro > 0 && batch % micro != 0) {
      throw new ConfigException(Keys.MICRO_BATCH_SIZE.dotted(), micro + " does not divide the step's batch of " + batch
          + " sequences (" + Keys.PROMPTS_PER_STEP + " x " + Keys.GROUP_SIZE + ")");
    }
    if (get(Keys.WARMUP_STEPS) > get(Keys.STEPS)) {
      throw new ConfigException(Keys.WARMUP_STEPS.dotted(), get(Keys.WARMUP_STEPS) + " is more than " + Keys.STEPS
          + " (" + get(Keys.STEPS) + ")");
    }
  }

  /** {@code grpo.clip_epsilon_low}, or {@code grpo.clip_epsilon} where it is 0. */
  public double clipEpsilonLow() {
    double low = get(Keys.CLIP_EPSILON_LOW);
    return low == 0 ? get(Keys.CLIP_EPSILON) : low;
  }

  /** {@code grpo.clip_epsilon_high}, or {@code grpo.clip_epsilon} where it is 0. */
  public double clipEpsilonHigh() {
    double high = get(Keys.CLIP_EPSILON_HIGH);
    return high == 0 ? get(Keys.CLIP_EPSILON) : high;
  }

  /** Your model, data and reward: the Python workers, all three together. */
  private void validateData() {
    boolean data = !get(Keys.TRAIN).isEmpty();
    boolean model = !get(Keys.MODEL_PATH).isBlank();
    if (get(Keys.EVAL_EVERY) > 0 && get(Keys.EVAL).isEmpty()) {
      throw new ConfigException(Keys.EVAL_EVERY.dotted(), "evaluates " + Keys.EVAL + ": set it to your held-out prompts");
    }
    if (!get(Keys.EVAL).isEmpty() && !data) {
      throw new ConfigException(Keys.EVAL.dotted(), "is evaluated beside your training prompts: set " + Keys.TRAIN);
    }
    if (!data && model) {
      throw new ConfigException(Keys.MODEL_PATH.dotted(), "a Hugging Face model needs your prompts too (" + Keys.TRAIN
          + "): the built-in digit task speaks the Java runtime's own 14-token vocabulary");
    }
    if (!get(Keys.REWARD_CLASS).isBlank()) {
      if (data) {
        throw new ConfigException(Keys.REWARD_CLASS.dotted(), "scores the Java runtime's completions; your data is"
            + " scored by " + Keys.REWARD_FUNCTION + " (a Python function)");
      }
      // before Ray starts, with the workers' view: the driver's class path, then cluster.code_search_path
      Thread thread = Thread.currentThread();
      ClassLoader prior = thread.getContextClassLoader();
      try (java.net.URLClassLoader user = userCode(get(Keys.CODE_SEARCH_PATH))) {
        thread.setContextClassLoader(user);
        dev.ravel.workers.reward.RewardFunction.load(get(Keys.REWARD_CLASS));
      } catch (IllegalArgumentException e) {
        throw new ConfigException(Keys.REWARD_CLASS.dotted(), e.getMessage().replaceFirst("^reward\\.class ", "")
            + (get(Keys.CODE_SEARCH_PATH).isEmpty() ? "" : " or " + Keys.CODE_SEARCH_PATH + " " + get(Keys.CODE_SEARCH_PATH)));
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      } finally {
        thread.setContextClassLoader(prior);
      }
    }
    if (!data && !get(Keys.REWARD_FUNCTION).isBlank()) {
      throw new ConfigException(Keys.REWARD_FUNCTION.dotted(), "scores your data: set " + Keys.TRAIN + " too");
    }
    if (!data) {
      return;
    }
    if (!model) {
      throw new ConfigException(Keys.TRAIN.dotted(), "your prompts need your model and its tokenizer: set "
          + Keys.MODEL_PATH + " to a Hugging Face checkpoint folder");
    }
    if (!pythonWorkers()) {
      throw new ConfigException(Keys.MODEL_PATH.dotted(), "a Hugging Face model runs in Ravel's Python workers: set "
          + Keys.GENERATION_RUNTIME + " and " + Keys.TRAINER_RUNTIME + " to python");
    }
  }

  private void validateRuntimes() {
    if (get(Keys.INFLIGHT_UPDATES) && mode() != Mode.ASYNC) {
      throw new ConfigException(Keys.INFLIGHT_UPDATES.dotted(), "updates the weights of requests in flight, which only"
          + " async runs have at a refit: set " + Keys.MODE + ": async, or leave it false");
    }
    String generation = get(Keys.GENERATION_RUNTIME);
    String trainer = get(Keys.TRAINER_RUNTIME);
    if (generation.equals(RUNTIME_JAVA) && trainer.equals(RUNTIME_PYTHON)
        && get(Keys.BACKEND).equals(BACKEND_OPENAI)) {
      validateHttpClientsOfPythonTrainer();
      return;
    }
    if (!generation.equals(trainer)) {
      throw new ConfigException(Keys.TRAINER_RUNTIME.dotted(), "is " + trainer + " but " + Keys.GENERATION_RUNTIME
          + " is " + generation
          + ": generation and training must hold the same model family (the java runtime serves Ravel's TinyLm,"
          + " the python one a transformers model); set both to " + trainer + " or both to " + generation
          + (trainer.equals(RUNTIME_PYTHON) ? ", or make the java workers the HTTP clients of vLLM servers ("
              + Keys.BACKEND + ": openai, " + Keys.LAUNCH + ": vllm)" : ""));
    }
    if (get(Keys.TRAINER_WORKERS) > 1 && !trainer.equals(RUNTIME_PYTHON)) {
      throw new ConfigException(Keys.TRAINER_WORKERS.dotted(), get(Keys.TRAINER_WORKERS) + " ranks train together with"
          + " torch.distributed in Ravel's Python trainer: set " + Keys.TRAINER_RUNTIME + " and "
          + Keys.GENERATION_RUNTIME + " to python, or leave it 1 (the Java trainer trains alone)");
    }
    if (!get(Keys.TRAINER_PLACEMENT).equals(Keys.PLACEMENT_NONE) && !trainer.equals(RUNTIME_PYTHON)) {
      throw new ConfigException(Keys.TRAINER_PLACEMENT.dotted(), "places the Python trainer's ranks: set "
          + Keys.TRAINER_RUNTIME + " to python, or leave it none (the Java trainer goes where trainer.resources say)");
    }
    String engine = get(Keys.ENGINE);
    checkDevices();
    if (generation.equals(RUNTIME_JAVA)) {
      if (!engine.equals("transformers")) {
        throw new ConfigException(Keys.ENGINE.dotted(), engine + " runs in Python workers: set " + Keys.GENERATION_RUNTIME
            + " and " + Keys.TRAINER_RUNTIME + " to python (the java runtime generates with Ravel's own engine)");
      }
      return;
    }
    if (get(Keys.INFLIGHT_UPDATES)) {
      throw new ConfigException(Keys.INFLIGHT_UPDATES.dotted(), "the Python workers' engines take new weights between"
          + " calls only: set it false, or use the java runtime");
    }
    if (get(Keys.BACKEND).equals(BACKEND_OPENAI)) {
      throw new ConfigException(Keys.BACKEND.dotted(), "openai is the Java workers' HTTP client; Python workers"
          + " generate in their own process (" + Keys.ENGINE + ": transformers or vllm)");
    }
    if (get(Keys.MODEL_PATH).isBlank()) {
      pythonModel();
    }
  }

  /**
   * Java generation workers that are only the HTTP clients of inference servers ({@code backend: openai}) beside the
   * Python trainer: the servers serve {@code model.path} and load the trainer's weights files themselves, so the
   * workers need no model of their own. Every other pairing of runtimes is refused above.
   */
  private void checkDevices() {
    for (Key<String> device : List.of(Keys.GENERATION_DEVICE, Keys.TRAINER_DEVICE)) {
      Key<Double> gpus = device == Keys.GENERATION_DEVICE ? Keys.GENERATION_NUM_GPUS : Keys.TRAINER_NUM_GPUS;
      if (get(device).equals("cuda") && get(gpus) == 0) {
        throw new ConfigException(device.dotted(), "cuda needs " + gpus + " > 0: Ray shows an actor only"
            + " the GPUs it asked for (auto uses CUDA when the actor has a GPU)");
      }
    }
  }

  private void validateHttpClientsOfPythonTrainer() {
    checkDevices();
    if (!get(Keys.ENGINE).equals("transformers")) {
      throw new ConfigException(Keys.ENGINE.dotted(), get(Keys.ENGINE) + " runs in Python generation workers; Java"
          + " workers beside the Python trainer generate through their servers (leave it transformers)");
    }
    if (get(Keys.INFLIGHT_UPDATES)) {
      throw new ConfigException(Keys.INFLIGHT_UPDATES.dotted(), "needs servers that label each token with the weights"
          + " that sampled it (vLLM 0.33's return_weight_versions), which vLLM 0.32 does not: leave it false");
    }

    if (get(Keys.MODEL_PATH).isBlank()) {
      throw new ConfigException(Keys.MODEL_PATH.dotted(), "inference servers beside the Python trainer serve your"
          + " Hugging Face checkpoint: set it to the folder (the servers load it, the trainer starts from it)");
    }
    if (get(Keys.LAUNCH).equals(ServerBackendSpec.LAUNCH_RAVEL)) {
      throw new ConfigException(Keys.LAUNCH.dotted(), "ravel serves Ravel's TinyLm, not the Python trainer's model:"
          + " use launch: vllm, launch_command or servers");
    }
    if (get(Keys.REFIT) && !get(Keys.WEIGHT_SYNC).equals(ServerBackendSpec.SYNC_NATIVE)) {
      throw new ConfigException(Keys.WEIGHT_SYNC.dotted(), get(Keys.WEIGHT_SYNC) + " loads PEFT adapters, which the"
          + " Python trainer does not write: use native (its weights files, vLLM with Ravel's plugin)");
    }
    if (get(Keys.TRAINER_WORKERS) > 1) {
      throw new ConfigException(Keys.TRAINER_WORKERS.dotted(), "a trainer group beside inference servers is not"
          + " built yet: leave it 1");
    }
  }

  /**
   * Whether the trainer is Ravel's Python trainer (a transformers model); its generation workers are Python too,
   * or Java HTTP clients of inference servers ({@link #pythonGeneration()}).
   */
  public boolean pythonWorkers() {
    return get(Keys.TRAINER_RUNTIME).equals(RUNTIME_PYTHON);
  }

  /** Whether the generation workers are Ravel's Python workers. */
  public boolean pythonGeneration() {
    return get(Keys.GENERATION_RUNTIME).equals(RUNTIME_PYTHON);
  }

  /**
   * The Python workers' model over the task's {@code vocabSize} tokens, for prompts and completions of at most
   * {@code maxPositions} tokens together.
   *
   * @throws ConfigException naming the bad {@code model.*} key
   */
  public PythonModel pythonModel(int vocabSize, int maxPositions) {
    try {
      return new PythonModel(get(Keys.FAMILY), vocabSize, get(Keys.LAYERS), get(Keys.HIDDEN), get(Keys.HEADS),
          maxPositions);
    } catch (ConfigException e) {
      throw e.under(Keys.FAMILY.section() + ".");
    }
  }

  private void pythonModel() {
    pythonModel(2, 2);
  }

  /** The embedded engine in each generation worker's JVM. */
  public static final String BACKEND_EMBEDDED = Keys.BACKEND_EMBEDDED;
  /** Inference servers speaking vLLM's OpenAI-compatible protocol. */
  public static final String BACKEND_OPENAI = Keys.BACKEND_OPENAI;

  /**
   * The servers settings of {@code generation.backend: openai}, or null for the embedded backend.
   *
   * @throws ConfigException naming the first bad {@code generation.*} key
   */
  public ServerBackendSpec serverBackend() {
    if (!get(Keys.BACKEND).equals(BACKEND_OPENAI)) {
      return null;
    }
    String launch = get(Keys.LAUNCH);
    String command = get(Keys.LAUNCH_COMMAND);
    if (launch.equals(Keys.LAUNCH_VLLM)) {
      if (!command.isEmpty()) {
        throw new ConfigException(Keys.LAUNCH_COMMAND.dotted(), "is set beside " + Keys.LAUNCH + ": vllm, which"
            + " composes its own command: keep one");
      }
      if (!get(Keys.SERVERS).isEmpty()) {
        throw new ConfigException(Keys.LAUNCH.dotted(), "vllm launches a server per worker, and " + Keys.SERVERS
            + " names servers already running: keep one");
      }
      command = vllmLaunchCommand();
      launch = "";
    }
    try {
      return ServerBackendSpec.builder()
          .servers(get(Keys.SERVERS))
          .launch(launch)
          .launchCommand(command)
          .connectTimeout(seconds(Keys.CONNECT_TIMEOUT_S))
          .requestTimeout(seconds(Keys.REQUEST_TIMEOUT_S))
          .launchTimeout(seconds(Keys.LAUNCH_TIMEOUT_S))
          .maxInFlight(get(Keys.MAX_IN_FLIGHT))
          .refit(get(Keys.REFIT))
          .weightSync(get(Keys.WEIGHT_SYNC))
          .inflightUpdates(get(Keys.INFLIGHT_UPDATES))
          .recordExchanges(get(Keys.RECORD_EXCHANGES))
          .serverHeapMb(get(Keys.SERVER_HEAP_MB))
          .build();
    } catch (ConfigException e) {
      throw e.under(Keys.BACKEND.section() + ".");
    }
  }

  /**
   * The command {@code generation.launch: vllm} runs in each worker (split on spaces, no shell; {@code {host}},
   * {@code {port}} and {@code {model}} filled in by the worker): {@code generation.vllm serve model.path} with
   * Ravel's weight-transfer backend ({@code ravel-file}), vLLM's RL routes ({@code VLLM_SERVER_DEV_MODE=1}),
   * behaviour log-probs after temperature and top-p ({@code processed_logprobs}), the model's own sampling defaults
   * off ({@code --generation-config vllm}) and the run's seed; on a worker without GPUs vLLM's CPU platform, in
   * {@code model.dtype} ({@code auto}: float32 on the CPU, as the trainer), eager.
   */
  private String vllmLaunchCommand() {
    if (!(get(Keys.GENERATION_RUNTIME).equals(RUNTIME_JAVA) && get(Keys.TRAINER_RUNTIME).equals(RUNTIME_PYTHON))) {
      throw new ConfigException(Keys.LAUNCH.dotted(), "vllm serves model.path and takes the Python trainer's weights"
          + " files: set " + Keys.TRAINER_RUNTIME + " to python and " + Keys.GENERATION_RUNTIME + " to java (the"
          + " workers are the servers' HTTP clients)");
    }
    String model = get(Keys.MODEL_PATH);
    if (model.isBlank()) {
      throw new ConfigException(Keys.MODEL_PATH.dotted(), "launch: vllm serves your Hugging Face checkpoint: set"
          + " it to the folder");
    }
    String folder = Path.of(model).toAbsolutePath().normalize().toString();
    for (var e : Map.of(Keys.MODEL_PATH, folder, Keys.VLLM, get(Keys.VLLM)).entrySet()) {
      if (e.getValue().matches(".*\\s.*")) {
        throw new ConfigException(e.getKey().dotted(), "'" + e.getValue() + "' holds a space, which launch: vllm"
            + " cannot pass (no shell): use a path without one, or launch_command");
      }
    }
    boolean cpu = get(Keys.GENERATION_NUM_GPUS) == 0 || get(Keys.GENERATION_DEVICE).equals("cpu");
    String dtype = get(Keys.DTYPE).equals("auto") ? (cpu ? "float32" : "auto") : get(Keys.DTYPE);
    // vLLM's spans go to the run's receiver, which writes them into the run folder and sends them on to the run's
    // OTLP backend, as the run's exporter says
    boolean traced = telemetry().enabled() && telemetry().engineTracing()
        && (telemetry().exporter().writesFiles() || telemetry().exporter().usesOtlp());
    List<String> parts = new ArrayList<>(List.of("env", "VLLM_SERVER_DEV_MODE=1"));
    if (cpu) {
      parts.addAll(List.of("VLLM_TARGET_DEVICE=cpu", "VLLM_CPU_KVCACHE_SPACE=1"));
    }
    if (traced) { // vLLM's exporter defaults to gRPC: the run's receiver speaks OTLP/HTTP protobuf
      parts.add("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf");
    }
    parts.addAll(List.of(get(Keys.VLLM), "serve", folder, "--host", "{host}", "--port", "{port}",
        "--served-model-name", "{model}", "--dtype", dtype, "--seed", Long.toString(get(Keys.SEED)),
        "--weight-transfer-config", "{\"backend\":\"ravel-file\"}", "--logprobs-mode", "processed_logprobs",
        "--generation-config", "vllm"));
    if (cpu) {
      parts.add("--enforce-eager");
    }
    if (traced) { // engine tracing: vLLM's llm_request spans to the run's own receiver on the worker's node
      parts.addAll(List.of("--otlp-traces-endpoint", dev.ravel.workers.generation.openai.OpenAiBackend.OTLP_ENDPOINT));
    }
    return String.join(" ", parts);
  }

  private Duration seconds(Key<Double> key) {
    return Duration.ofMillis(Math.round(get(key) * 1000));
  }

  /** Tokens in a prompt of the run's task (every arithmetic prompt {@code "a+b="} has the same length). */
  private static int promptTokens() {
    return dev.ravel.workers.model.CharTokenizer.arithmetic()
        .encode(dev.ravel.workers.task.ArithmeticTask.standard().problem(0, 0).prompt()).length;
  }

  /** The value of {@code key}: the command line's, else the file's, else its default; converted and checked. */
  @SuppressWarnings("unchecked")
  public <T> T get(Key<T> key) {
    return (T) values.get(key);
  }

  /** {@code sync} or {@code async}. */
  public Mode mode() {
    String m = get(Keys.MODE).toLowerCase(Locale.ROOT);
    return switch (m) {
      case "sync" -> Mode.SYNC;
      case "async" -> Mode.ASYNC;
      default -> throw new ConfigException(Keys.MODE.dotted(), "unknown mode '" + m + "' (valid: sync, async)");
    };
  }

  public TelemetryConfig telemetry() {
    return telemetry;
  }

  /** The file this config was read from, or null. */
  public Path source() {
    return source;
  }

  /** All values but telemetry's, as {@code section.key -> value} (for the run summary). */
  public Map<String, Object> flatten() {
    Map<String, Object> out = new LinkedHashMap<>();
    values.forEach((k, v) -> out.put(k.dotted(), v));
    return out;
  }

  /**
   * The whole resolved configuration, telemetry included ({@code telemetry.<key>}, as the workers get it), for
   * the run's record. Holds no secret: OTLP headers are not telemetry config keys.
   */
  public Map<String, Object> resolved() {
    Map<String, Object> out = flatten();
    String prefix = TelemetryConfig.ENV_PREFIX;
    telemetry.toEnvironment().forEach((k, v) ->
        out.put("telemetry." + k.substring(prefix.length()).toLowerCase(Locale.ROOT), v));
    return out;
  }

  /** GRPO training mode. */
  public enum Mode {
    SYNC, ASYNC;

    public String configName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * A class loader over {@code paths} as Ray's code search path reads them (a jar, a class folder, and the jars in a
   * folder), after this class's own loader.
   */
  private static java.net.URLClassLoader userCode(List<String> paths) throws java.io.IOException {
    List<java.net.URL> urls = new ArrayList<>();
    for (String p : paths) {
      java.nio.file.Path path = java.nio.file.Path.of(p).toAbsolutePath();
      urls.add(path.toUri().toURL());
      if (java.nio.file.Files.isDirectory(path)) {
        try (var jars = java.nio.file.Files.list(path)) {
          for (java.nio.file.Path j : jars.filter(f -> f.toString().endsWith(".jar")).sorted().toList()) {
            urls.add(j.toUri().toURL());
          }
        }
      }
    }
    return new java.net.URLClassLoader(urls.toArray(java.net.URL[]::new), RunConfig.class.getClassLoader());
  }
}
