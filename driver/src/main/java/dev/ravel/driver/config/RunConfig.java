package dev.ravel.driver.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.config.Values;
import dev.ravel.workers.generation.openai.ServerBackendSpec;
import dev.ravel.workers.python.PythonModel;
import dev.ravel.workers.python.PythonWorkers;
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
  public static final String RUNTIME_JAVA = "java";
  /** {@code generation.runtime}/{@code trainer.runtime}: Ravel's Python workers (PyTorch, transformers, vLLM). */
  public static final String RUNTIME_PYTHON = "python";

  /** Every key but telemetry's, with its default; telemetry's are {@link TelemetryConfig#KEYS}. */
  static final Map<String, Map<String, Object>> DEFAULTS = new LinkedHashMap<>();

  static {
    section("run", "mode", "sync", "seed", 7);
    section("cluster", "address", "", "num_cpus", 0, "worker_heap_mb", 512, "max_restarts", 3);
    section("generation", "workers", 2, "backend", "embedded", "kv_token_budget", 4096,
        "max_running_requests", 64, "max_concurrency", 32, "model", "ravel-tiny",
        // backend openai: the servers given, or one launched per worker
        "servers", "", "launch", "", "launch_command", "", "connect_timeout_s", 5, "request_timeout_s", 120,
        "launch_timeout_s", 60, "max_in_flight", 64, "refit", true, "server_heap_mb", 256,
        // where the workers run: Java (Ravel's engine and TinyLm) or Python (transformers or vLLM)
        "runtime", RUNTIME_JAVA, "engine", "transformers", "num_gpus", 0, "device", "auto",
        // vLLM's ignore_eos: every completion runs to grpo.max_new_tokens (the same work whatever is learnt)
        "ignore_eos", false);
    section("trainer", "runtime", RUNTIME_JAVA, "num_gpus", 0, "device", "auto");
    // the Python workers' policy: a transformers config with random initialisation (the Java runtime's TinyLm
    // has a size of its own)
    // (java_hidden, java_embed: the Java TinyLm's hidden units and embedding width)
    section("model", "family", "gpt2", "layers", 2, "hidden", 128, "heads", 4, "java_hidden", 64, "java_embed", 16);
    section("grpo", "steps", 30, "prompts_per_step", 32, "group_size", 8, "learning_rate", 0.03,
        "clip_epsilon", 0.2, "kl_beta", 0.04, "temperature", 1.0, "top_p", 1.0, "max_new_tokens", 4,
        "max_trajectory_age_steps", 1, "checkpoint_every", 0, "groups_per_call", 0);
  }

  private static void section(String name, Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    DEFAULTS.put(name, m);
  }

  private final Map<String, Map<String, Object>> values;
  private final TelemetryConfig telemetry;
  private final Path source;

  private RunConfig(Map<String, Map<String, Object>> values, TelemetryConfig telemetry, Path source) {
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
        // an empty or comment-only file has no token at all (readValue would fail): defaults, like no file
        Object parsed = p.nextToken() == null ? null : YAML.readValue(p, Object.class);
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
    Map<String, Map<String, Object>> sections = new LinkedHashMap<>();
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
        put(sections, telemetrySection, name + "." + kv.getKey(), kv.getValue());
      }
    }
    Map<String, String> telemetryEnv = new LinkedHashMap<>(env);
    for (String o : overrides) {
      int eq = o.indexOf('=');
      if (eq <= 0) {
        throw new ConfigException(o, "an override has the form section.key=value");
      }
      String key = o.substring(0, eq).trim();
      put(sections, telemetrySection, key, scalar(o.substring(eq + 1)));
      if (key.startsWith("telemetry.")) {
        // the command line is the most explicit: it beats RAVEL_TELEMETRY_* from the environment
        telemetryEnv.remove(TelemetryConfig.ENV_PREFIX + key.substring("telemetry.".length()).toUpperCase(Locale.ROOT));
      }
    }
    Map<String, Map<String, Object>> merged = new LinkedHashMap<>();
    DEFAULTS.forEach((name, defaults) -> {
      Map<String, Object> m = new LinkedHashMap<>(defaults);
      m.putAll(sections.getOrDefault(name, Map.of()));
      merged.put(name, m);
    });
    TelemetryConfig telemetry = TelemetryConfig.fromMap(telemetrySection, telemetryEnv);
    return new RunConfig(merged, telemetry, file);
  }

  private static void put(Map<String, Map<String, Object>> sections, Map<String, Object> telemetry, String dotted,
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
    Map<String, Object> defaults = DEFAULTS.get(section);
    if (defaults == null) {
      throw new ConfigException(dotted, "unknown section '" + section + "' (valid: " + sectionNames() + ")");
    }
    if (!defaults.containsKey(key)) {
      throw new ConfigException(dotted, "unknown key (valid: " + String.join(", ", defaults.keySet()) + ")");
    }
    sections.computeIfAbsent(section, s -> new LinkedHashMap<>()).put(key, value);
  }

  private static String sectionNames() {
    List<String> names = new ArrayList<>(DEFAULTS.keySet());
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

  private void validate() {
    mode();
    if (longValue("run.seed") < 0) {
      throw new ConfigException("run.seed", "must be a whole number >= 0, got " + longValue("run.seed"));
    }
    positive("grpo.steps");
    positive("grpo.prompts_per_step");
    if (integer("grpo.group_size") < 2) {
      throw new ConfigException("grpo.group_size", "must be at least 2 (advantages are relative to the group)");
    }
    positive("grpo.max_new_tokens");
    positive("generation.workers");
    positive("generation.kv_token_budget");
    positive("generation.max_running_requests");
    positive("generation.max_concurrency");
    bool("generation.ignore_eos");
    // a request holds its prompt and every new token in the engine's KV budget: one that cannot fit is
    // never admitted, so say so now rather than from inside a worker after the head started
    int prompt = promptTokens();
    int needed = prompt + integer("grpo.max_new_tokens");
    if (integer("generation.kv_token_budget") < needed) {
      throw new ConfigException("generation.kv_token_budget", integer("generation.kv_token_budget")
          + " tokens cannot hold one request: a prompt (" + prompt + " tokens) plus grpo.max_new_tokens ("
          + integer("grpo.max_new_tokens") + ") needs " + needed);
    }
    if (integer("grpo.max_trajectory_age_steps") < 0) {
      throw new ConfigException("grpo.max_trajectory_age_steps", "must not be negative");
    }
    if (integer("grpo.groups_per_call") < 0) {
      throw new ConfigException("grpo.groups_per_call", "must not be negative (0: a step's groups split evenly over "
          + "the generation workers)");
    }
    if (integer("grpo.groups_per_call") > integer("grpo.prompts_per_step")) {
      throw new ConfigException("grpo.groups_per_call", integer("grpo.groups_per_call")
          + " is more than grpo.prompts_per_step (" + integer("grpo.prompts_per_step") + ")");
    }
    if (integer("grpo.checkpoint_every") < 0) {
      throw new ConfigException("grpo.checkpoint_every", "must not be negative");
    }
    if (integer("cluster.num_cpus") < 0) {
      throw new ConfigException("cluster.num_cpus", "must not be negative");
    }
    if (integer("cluster.max_restarts") < 0 || integer("cluster.max_restarts") > 100) {
      throw new ConfigException("cluster.max_restarts", "must be between 0 and 100, got " + integer("cluster.max_restarts"));
    }
    if (integer("cluster.worker_heap_mb") < 64) {
      throw new ConfigException("cluster.worker_heap_mb", "must be at least 64");
    }
    range("grpo.learning_rate", 0, 10, false);
    range("grpo.clip_epsilon", 0, 1, false);
    range("grpo.kl_beta", 0, 100, true);
    // GRPO compares a group's samples: at temperature 0 they are all the same and no group has a signal
    range("grpo.temperature", 0, 10, false);
    range("grpo.top_p", 0, 1, false);
    if (string("generation.model").isBlank()) {
      throw new ConfigException("generation.model", "must not be empty");
    }
    String backend = string("generation.backend");
    switch (backend) {
      case BACKEND_EMBEDDED -> { }
      case BACKEND_OPENAI -> serverBackend();
      default -> throw new ConfigException("generation.backend", "unknown backend '" + backend
          + "' (valid: " + BACKEND_EMBEDDED + ", " + BACKEND_OPENAI + ")");
    }
    validateRuntimes();
  }

  private void validateRuntimes() {
    String generation = runtime("generation.runtime");
    String trainer = runtime("trainer.runtime");
    if (!generation.equals(trainer)) {
      throw new ConfigException("trainer.runtime", "is " + trainer + " but generation.runtime is " + generation
          + ": generation and training must hold the same model family (the java runtime serves Ravel's TinyLm,"
          + " the python one a transformers model); set both to " + trainer + " or both to " + generation);
    }
    String engine = string("generation.engine");
    if (!PythonWorkers.ENGINES.contains(engine)) {
      throw new ConfigException("generation.engine", "unknown engine '" + engine + "' (valid: "
          + String.join(", ", PythonWorkers.ENGINES) + ")");
    }
    for (String key : List.of("generation.device", "trainer.device")) {
      if (!PythonWorkers.DEVICES.contains(string(key))) {
        throw new ConfigException(key, "unknown device '" + string(key) + "' (valid: "
            + String.join(", ", PythonWorkers.DEVICES) + ")");
      }
    }
    for (String key : List.of("generation.num_gpus", "trainer.num_gpus")) {
      range(key, 0, 1024, true);
    }
    for (String role : List.of("generation", "trainer")) {
      if (string(role + ".device").equals("cuda") && number(role + ".num_gpus") == 0) {
        throw new ConfigException(role + ".device", "cuda needs " + role + ".num_gpus > 0: Ray shows an actor only"
            + " the GPUs it asked for (auto uses CUDA when the actor has a GPU)");
      }
    }
    if (generation.equals(RUNTIME_JAVA)) {
      if (!engine.equals("transformers")) {
        throw new ConfigException("generation.engine", engine + " runs in Python workers: set generation.runtime"
            + " and trainer.runtime to python (the java runtime generates with Ravel's own engine)");
      }
      return;
    }
    if (string("generation.backend").equals(BACKEND_OPENAI)) {
      throw new ConfigException("generation.backend", "openai is the Java workers' HTTP client; Python workers"
          + " generate in their own process (generation.engine: transformers or vllm)");
    }
    pythonModel();
    positive("model.java_hidden");
    positive("model.java_embed");
  }

  private String runtime(String key) {
    String r = string(key);
    if (!r.equals(RUNTIME_JAVA) && !r.equals(RUNTIME_PYTHON)) {
      throw new ConfigException(key, "unknown runtime '" + r + "' (valid: " + RUNTIME_JAVA + ", " + RUNTIME_PYTHON + ")");
    }
    return r;
  }

  /** Whether the generation workers and the trainer are Ravel's Python workers. */
  public boolean pythonWorkers() {
    return string("generation.runtime").equals(RUNTIME_PYTHON);
  }

  /**
   * The Python workers' model over the task's {@code vocabSize} tokens, for prompts and completions of at most
   * {@code maxPositions} tokens together.
   *
   * @throws ConfigException naming the bad {@code model.*} key
   */
  public PythonModel pythonModel(int vocabSize, int maxPositions) {
    try {
      return new PythonModel(string("model.family"), vocabSize, integer("model.layers"), integer("model.hidden"),
          integer("model.heads"), maxPositions);
    } catch (IllegalArgumentException e) {
      String m = e.getMessage();
      int colon = m.indexOf(": ");
      String field = colon > 0 ? m.substring(0, colon) : "family";
      throw new ConfigException("model." + field, colon > 0 ? m.substring(colon + 2) : m);
    }
  }

  private void pythonModel() {
    pythonModel(2, 2);
  }

  /** The embedded engine in each generation worker's JVM. */
  public static final String BACKEND_EMBEDDED = "embedded";
  /** Inference servers speaking vLLM's OpenAI-compatible protocol. */
  public static final String BACKEND_OPENAI = "openai";

  /**
   * The servers settings of {@code generation.backend: openai}, or null for the embedded backend.
   *
   * @throws ConfigException naming the first bad {@code generation.*} key
   */
  public ServerBackendSpec serverBackend() {
    if (!string("generation.backend").equals(BACKEND_OPENAI)) {
      return null;
    }
    try {
      return ServerBackendSpec.builder()
          .servers(Values.list("generation.servers", raw("generation.servers")))
          .launch(string("generation.launch"))
          .launchCommand(string("generation.launch_command"))
          .connectTimeout(Duration.ofMillis(Math.round(number("generation.connect_timeout_s") * 1000)))
          .requestTimeout(Duration.ofMillis(Math.round(number("generation.request_timeout_s") * 1000)))
          .launchTimeout(Duration.ofMillis(Math.round(number("generation.launch_timeout_s") * 1000)))
          .maxInFlight(integer("generation.max_in_flight"))
          .refit(Values.bool("generation.refit", raw("generation.refit")))
          .serverHeapMb(integer("generation.server_heap_mb"))
          .build();
    } catch (IllegalArgumentException e) {
      String m = e.getMessage();
      int colon = m.indexOf(": ");
      throw colon > 0 ? new ConfigException(m.substring(0, colon), m.substring(colon + 2))
          : new ConfigException("generation.backend", m);
    }
  }

  private void positive(String key) {
    if (integer(key) < 1) {
      throw new ConfigException(key, "must be at least 1, got " + integer(key));
    }
  }

  private void range(String key, double min, double max, boolean minInclusive) {
    double v = number(key);
    if (!(minInclusive ? v >= min : v > min) || v > max) {
      throw new ConfigException(key, "must be in " + (minInclusive ? "[" : "(") + min + ", " + max + "], got " + v);
    }
  }

  /** Tokens in a prompt of the run's task (every arithmetic prompt {@code "a+b="} has the same length). */
  private static int promptTokens() {
    return dev.ravel.workers.model.CharTokenizer.arithmetic()
        .encode(dev.ravel.workers.task.ArithmeticTask.standard().problem(0, 0).prompt()).length;
  }

  private Object raw(String dotted) {
    int dot = dotted.indexOf('.');
    return values.get(dotted.substring(0, dot)).get(dotted.substring(dot + 1));
  }

  /** A whole-number value ({@code section.key}); the error names the key. */
  public int integer(String key) {
    return Values.intValue(key, raw(key));
  }

  public long longValue(String key) {
    return Values.longValue(key, raw(key));
  }

  public double number(String key) {
    return Values.number(key, raw(key));
  }

  public String string(String key) {
    return Values.string(key, raw(key));
  }

  /** A true/false value; the error names the key. */
  public boolean bool(String key) {
    return Values.bool(key, raw(key));
  }

  /** {@code sync} or {@code async}. */
  public Mode mode() {
    String m = string("run.mode").toLowerCase(Locale.ROOT);
    return switch (m) {
      case "sync" -> Mode.SYNC;
      case "async" -> Mode.ASYNC;
      default -> throw new ConfigException("run.mode", "unknown mode '" + m + "' (valid: sync, async)");
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
    values.forEach((s, m) -> m.forEach((k, v) -> out.put(s + "." + k, v)));
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
}
