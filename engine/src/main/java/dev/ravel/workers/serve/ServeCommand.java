package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.workers.engine.EngineConfig;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.WeightsFile;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code ravel serve}: Ravel's engine behind vLLM's OpenAI-compatible HTTP protocol (an
 * {@link InferenceServer}) until SIGTERM/SIGINT or, with {@code --exit-with-parent PID}, until that
 * process is gone. When it listens it prints exactly one line to stdout,
 * {@code ravel serve: listening on http://<host>:<port>}. Telemetry: see {@code ServeTelemetry} (a
 * worker-launched server starts like a worker process; a standalone one like {@code ravel run}'s driver).
 * Run it with {@link ServeMain} or as a subcommand of the {@code ravel} CLI.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
    description = "Serve Ravel's engine over vLLM's OpenAI-compatible HTTP API (/v1/completions,"
        + " /v1/chat/completions, /v1/models, /v1/load_lora_adapter, /metrics, /health) until SIGTERM.")
public final class ServeCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to listen on (default ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--port", defaultValue = "8000", description = "Port; 0 = a free port (default ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--model-name", defaultValue = "ravel-tiny",
      description = "Served model name, vLLM's --served-model-name (default ${DEFAULT-VALUE}).")
  String modelName;

  @Option(names = "--weights", paramLabel = "FILE", description = "Initial weights (a WeightsFile); default: random init.")
  Path weights;

  @Option(names = "--seed", defaultValue = "7", description = "Seed of the random init without --weights (default ${DEFAULT-VALUE}).")
  long seed;

  @Option(names = "--kv-token-budget", defaultValue = "4096",
      description = "Tokens all running requests may hold together (default ${DEFAULT-VALUE}).")
  int kvTokenBudget;

  @Option(names = "--max-running-requests", defaultValue = "64",
      description = "Most requests in the running batch (default ${DEFAULT-VALUE}).")
  int maxRunningRequests;

  @Option(names = "--exit-with-parent", paramLabel = "PID",
      description = "Stop (engine closed, telemetry flushed) when process PID is gone (checked once a second).")
  Long parentPid;

  @Option(names = "--span-counts-dir", paramLabel = "DIR",
      description = "Once stopped, write this process's span counts (ended; exported, failed, dropped per exporter) "
          + "as JSON to DIR/inference-server-<pid>" + SPAN_COUNTS_SUFFIX + ", so that whoever launched it can add "
          + "them to a run's account.")
  Path spanCountsDir;

  /** How the file of {@code --span-counts-dir} ends, after {@code inference-server-<pid>}. */
  public static final String SPAN_COUNTS_SUFFIX = ".span-counts.json";

  /** The file a server with PID {@code pid} writes its counts to under {@code --span-counts-dir dir}. */
  public static Path spanCountsFile(Path dir, long pid) {
    return dir.resolve("inference-server-" + pid + SPAN_COUNTS_SUFFIX);
  }

  @Option(names = "--trace-sampler", defaultValue = "ravel",
      description = "Which requests get an llm_request span: ravel (the engine's sampler: errors, preemptions, slow"
          + " requests, engine_sample_ratio by request id; default) or parentbased (the sampled flag of the request's"
          + " traceparent, as vLLM's tracer: the client decides).")
  String traceSampler;

  @Option(names = "--record-exchanges", paramLabel = "FILE",
      description = "Append every HTTP exchange (method, path, query, trace and request-id headers, request and"
          + " response bodies, status) to FILE as JSON lines, for checking a client against vLLM's own code.")
  Path recordExchanges;

  @Option(names = "--telemetry", paramLabel = "KEY=VALUE",
      description = "Telemetry setting overriding the environment (repeatable), e.g. exporter=otlp.")
  Map<String, String> telemetry = new LinkedHashMap<>();

  /** The environment telemetry is read from (tests replace it). */
  Map<String, String> env = System.getenv();
  /** Where the listening line goes (tests replace it). */
  PrintStream out = System.out;
  /** How often the parent is checked (tests shorten it). */
  Duration parentInterval = Duration.ofSeconds(1);

  private final CountDownLatch stopped = new CountDownLatch(1);
  private InferenceServer server;
  private ProcessTelemetry processTelemetry;

  @Override
  public Integer call() throws InterruptedException {
    validate();
    ProcessTelemetry t = ServeTelemetry.start(env, telemetry);
    InferenceServer s;
    int bound;
    try {
      s = newServer(t);
      try {
        bound = s.start(host, port);
      } catch (RuntimeException e) {
        s.close();
        throw e;
      }
    } catch (RuntimeException e) {
      t.close();
      throw e;
    }
    synchronized (this) {
      server = s;
      processTelemetry = t;
    }
    Thread hook = new Thread(this::stop, "ravel-serve-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    if (parentPid != null) {
      ParentWatch.start(parentPid, parentInterval, this::stop);
    }
    out.println("ravel serve: listening on http://" + host + ":" + bound);
    out.flush();
    stopped.await();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // the JVM is exiting: the hook is what stopped us
    }
    return 0;
  }

  /** Stops HTTP, closes the engine, flushes telemetry (bounded), and lets {@link #call()} return. Idempotent. */
  void stop() {
    InferenceServer s;
    ProcessTelemetry t;
    synchronized (this) {
      s = server;
      t = processTelemetry;
      server = null;
      processTelemetry = null;
    }
    try {
      if (s != null) {
        s.close();
      }
    } finally {
      if (t != null) {
        t.close();
        writeSpanCounts(t.stats());
      }
      stopped.countDown();
    }
  }

  /** The counts, whole or not at all: written beside their file and moved onto it. */
  private void writeSpanCounts(ExportStats stats) {
    if (spanCountsDir == null) {
      return;
    }
    Path spanCounts = spanCountsFile(spanCountsDir, ProcessHandle.current().pid());
    try {
      Path tmp = spanCounts.resolveSibling(spanCounts.getFileName() + ".tmp");
      Files.writeString(tmp, new ObjectMapper().writeValueAsString(stats.json()), StandardCharsets.UTF_8);
      Files.move(tmp, spanCounts, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException | RuntimeException e) {
      System.err.println("ravel serve: cannot write span counts to " + spanCounts + ": " + e);
    }
  }

  private boolean parentBased() {
    return switch (traceSampler) {
      case "ravel" -> false;
      case "parentbased" -> true;
      default -> throw new ParameterException(spec.commandLine(),
          "--trace-sampler: unknown value '" + traceSampler + "' (valid: ravel, parentbased)");
    };
  }

  private InferenceServer newServer(ProcessTelemetry t) {
    CharTokenizer tokenizer = CharTokenizer.arithmetic();
    ModelWeights w = weights != null ? WeightsFile.read(weights)
        : ModelWeights.init(ModelSpec.tiny(tokenizer.vocabSize()), seed);
    TelemetryConfig c = t.config();
    EngineConfig config = EngineConfig.builder()
        .kvTokenBudget(kvTokenBudget)
        .maxRunningRequests(maxRunningRequests)
        .modelName(modelName)
        .eosToken(tokenizer.eos())
        .tracing(c.engineTracing())
        .parentBased(parentBased())
        .sampleRatio(c.engineSampleRatio())
        .slowRequest(c.engineSlowRequest())
        .build();
    return InferenceServer.builder().engineConfig(config).weights(w).tokenizer(tokenizer)
        .openTelemetry(t.openTelemetry()).recordExchanges(recordExchanges).build();
  }

  private void validate() {
    parentBased(); // the value is known
    if (port < 0 || port > 65535) {
      throw new ParameterException(spec.commandLine(), "--port: must be in [0, 65535] (got " + port + ")");
    }
    if (kvTokenBudget < 2) {
      throw new ParameterException(spec.commandLine(), "--kv-token-budget: must be at least 2 (got "
          + kvTokenBudget + ")");
    }
    if (maxRunningRequests < 1) {
      throw new ParameterException(spec.commandLine(), "--max-running-requests: must be at least 1 (got "
          + maxRunningRequests + ")");
    }
    if (modelName.isBlank()) {
      throw new ParameterException(spec.commandLine(), "--model-name: must not be blank");
    }
    if (parentPid != null && parentPid <= 0) {
      throw new ParameterException(spec.commandLine(), "--exit-with-parent: not a process id: " + parentPid);
    }
  }
}
