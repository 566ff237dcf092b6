package dev.ravel.workers.serve;

import com.sun.net.httpserver.HttpServer;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.EngineConfig;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import dev.ravel.workers.model.Tokenizer;
import io.opentelemetry.api.OpenTelemetry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Ravel's {@link EmbeddedEngine} behind vLLM's OpenAI-compatible HTTP protocol ({@code ravel serve}):
 * {@code /v1/completions}, {@code /v1/chat/completions}, {@code /v1/models}, {@code /health},
 * {@code /version}, {@code /metrics} (Prometheus text, vLLM's names) and vLLM's runtime LoRA routes
 * {@code /v1/load_lora_adapter} and {@code /v1/unload_lora_adapter}, through which a new weight version
 * ({@link dev.ravel.workers.model.WeightsFile}) is loaded.
 *
 * <p>The HTTP server is the JDK's ({@code com.sun.net.httpserver}) on a bounded pool of threads. Each
 * request's choices are submitted to the engine together, under the trace context of the request's
 * {@code traceparent}/{@code tracestate} headers, so the engine's {@code llm_request} spans are children
 * of the caller's span (a new root without them).
 *
 * <p>Build one with {@link #builder()}, {@link #start} it, and {@link #close()} it: new requests are
 * refused (503) first, then the engine closes (requests in flight get 503), then HTTP stops. The
 * OpenTelemetry given is used, not closed.
 */
public final class InferenceServer implements AutoCloseable {
  /**
   * TCP_NODELAY on the JDK server's connections: it writes a response's headers and body in two packets,
   * and without it Nagle's algorithm holds the body until the client's delayed ACK (about 40 ms per
   * request). Read once, when the JDK's HTTP server is first used in the JVM.
   */
  private static final String NODELAY = "sun.net.httpserver.nodelay";

  static {
    if (System.getProperty(NODELAY) == null) {
      System.setProperty(NODELAY, "true");
    }
  }

  private final EmbeddedEngine engine;
  private final ServedModels models;
  private final Tokenizer tokenizer;
  private final ServeMetrics metrics;
  private final int httpThreads;
  private final String version;
  private final java.nio.file.Path recordTo;
  private HttpServer http;
  private Routes routes;
  private ThreadPoolExecutor executor;
  private boolean closed;

  private InferenceServer(Builder b) {
    this.tokenizer = b.tokenizer;
    this.httpThreads = b.httpThreads;
    this.version = RavelVersion.get();
    this.recordTo = b.recordExchanges;
    this.engine = new EmbeddedEngine(b.engineConfig, b.initialModel.apply(TinyLm.of(b.weights)), b.openTelemetry);
    this.models = new ServedModels(b.engineConfig.modelName(), b.weights.version(),
        System.currentTimeMillis() / 1000);
    this.metrics = new ServeMetrics(b.engineConfig.modelName());
  }

  /** A builder; the engine config, weights, tokenizer and OpenTelemetry are required. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Binds {@code host:port} ({@code port} 0: a free port) and starts serving.
   *
   * @return the bound port
   * @throws UncheckedIOException naming the address when it cannot be bound
   * @throws IllegalStateException when already started or closed
   */
  public synchronized int start(String host, int port) {
    if (http != null || closed) {
      throw new IllegalStateException(closed ? "closed" : "already started on port " + port());
    }
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 128);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
    }
    AtomicInteger n = new AtomicInteger();
    executor = new ThreadPoolExecutor(httpThreads, httpThreads, 30, TimeUnit.SECONDS,
        new ArrayBlockingQueue<>(1024), r -> {
          Thread t = new Thread(r, "ravel-serve-http-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    executor.allowCoreThreadTimeOut(true);
    server.setExecutor(executor);
    RequestParser parser = new RequestParser(tokenizer, engine.config().kvTokenBudget());
    WeightSync sync = new WeightSync(engine, models, tokenizer);
    AdapterHandler adapters = new AdapterHandler(engine, models, tokenizer);
    StatusHandler status = new StatusHandler(engine, models, metrics, version);
    routes = new Routes(server, recordTo);
    Routes r = routes;
    CompletionHandler completions = new CompletionHandler(parser, models, new Generations(engine, metrics),
        new ResponseBodies(tokenizer, sync::label), sync, r::isClosing);
    routes
        .get("/health", status::health)
        .get("/version", status::version)
        .get("/v1/models", status::models)
        .get("/metrics", status::metrics)
        .post("/v1/completions", completions::completions)
        .post("/v1/chat/completions", completions::chat)
        .post("/v1/load_lora_adapter", adapters::load)
        .post("/v1/unload_lora_adapter", adapters::unload)
        // vLLM's native weight-update protocol (its RL routes)
        .post("/pause", sync::pause)
        .post("/resume", sync::resume)
        .get("/is_paused", sync::isPaused)
        .post("/init_weight_transfer_engine", sync::init)
        .post("/start_weight_update", sync::start)
        .post("/update_weights", sync::update)
        .post("/finish_weight_update", sync::finish)
        .get("/weight_info", sync::weightInfo)
        .get("/get_world_size", sync::worldSize);
    server.start();
    http = server;
    return port();
  }

  /** The bound port. */
  public synchronized int port() {
    if (http == null) {
      throw new IllegalStateException("not started");
    }
    return http.getAddress().getPort();
  }

  /** The served model name (the base model). */
  public String modelName() {
    return models.baseName();
  }

  /** The weight version the engine serves now. */
  public long weightVersion() {
    return models.currentVersion();
  }

  /** Whether the engine is held still by a pause (set as a pause begins, before the iteration under way ends). */
  boolean enginePaused() {
    return engine.isPaused();
  }

  /** The engine's counters and load now. */
  EngineStats engineStats() {
    return engine.snapshot();
  }

  /**
   * Answers new requests 503, closes the engine (choices still in it end as aborted, and their requests
   * are answered 503), waits up to two seconds for the exchanges in progress to finish, then stops the
   * listener, the connections and the HTTP threads. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (routes != null) {
      routes.closing();
    }
    engine.close();
    try {
      if (routes != null) {
        routes.awaitIdle(2000);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (http != null) {
      http.stop(0);
    }
    if (executor != null) {
      executor.shutdown();
      try {
        if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
          executor.shutdownNow();
        }
      } catch (InterruptedException e) {
        executor.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Builds an {@link InferenceServer}; {@link #build()} names the first missing or invalid field. */
  public static final class Builder {
    private EngineConfig engineConfig;
    private ModelWeights weights;
    private Tokenizer tokenizer;
    private String modelName;
    private OpenTelemetry openTelemetry;
    private int httpThreads = 32;
    private java.nio.file.Path recordExchanges;
    private java.util.function.UnaryOperator<dev.ravel.workers.model.LanguageModel> initialModel = m -> m;

    private Builder() {}

    /** Wraps the model made of the initial weights (tests hold the engine at a chosen point with it). */
    Builder initialModel(java.util.function.UnaryOperator<dev.ravel.workers.model.LanguageModel> wrap) {
      this.initialModel = wrap;
      return this;
    }

    /**
     * Appends every exchange (method, path, query, the headers a contract check needs, request and response
     * bodies, status) to {@code file} as one JSON line, for checking what a client sends against vLLM's own code
     * ({@code integration-tests/src/test/python/test_vllm_contract.py}); null (the default) records nothing.
     */
    public Builder recordExchanges(java.nio.file.Path file) {
      this.recordExchanges = file;
      return this;
    }

    /** The engine's settings; its model name is replaced by {@link #modelName} when that is set. */
    public Builder engineConfig(EngineConfig v) {
      this.engineConfig = v;
      return this;
    }

    /** The weights served at start (version included). */
    public Builder weights(ModelWeights v) {
      this.weights = v;
      return this;
    }

    public Builder tokenizer(Tokenizer v) {
      this.tokenizer = v;
      return this;
    }

    /** The served model name (vLLM's {@code --served-model-name}); default: the engine config's. */
    public Builder modelName(String v) {
      this.modelName = v;
      return this;
    }

    /** Where the engine's spans and metrics go; {@link OpenTelemetry#noop()} for nowhere. */
    public Builder openTelemetry(OpenTelemetry v) {
      this.openTelemetry = v;
      return this;
    }

    /** Threads serving HTTP requests (each waits for its request's choices); default 32. */
    public Builder httpThreads(int v) {
      this.httpThreads = v;
      return this;
    }

    /**
     * Starts the engine (not yet HTTP: see {@link InferenceServer#start}).
     *
     * @throws IllegalArgumentException naming the first missing or invalid field
     */
    public InferenceServer build() {
      if (engineConfig == null) {
        throw new IllegalArgumentException("engineConfig: required");
      }
      if (weights == null) {
        throw new IllegalArgumentException("weights: required");
      }
      if (tokenizer == null) {
        throw new IllegalArgumentException("tokenizer: required");
      }
      if (openTelemetry == null) {
        throw new IllegalArgumentException("openTelemetry: required (OpenTelemetry.noop() for none)");
      }
      if (httpThreads < 1) {
        throw new IllegalArgumentException("httpThreads: must be at least 1 (got " + httpThreads + ")");
      }
      if (weights.spec().vocabSize() != tokenizer.vocabSize()) {
        throw new IllegalArgumentException("weights: vocabulary of " + weights.spec().vocabSize()
            + " tokens, the tokenizer's " + tokenizer.vocabSize());
      }
      if (engineConfig.eosToken() != tokenizer.eos()) {
        throw new IllegalArgumentException("engineConfig: eosToken " + engineConfig.eosToken()
            + " is not the tokenizer's EOS token " + tokenizer.eos());
      }
      if (modelName != null) {
        engineConfig = engineConfig.toBuilder().modelName(modelName).build();
      }
      return new InferenceServer(this);
    }
  }
}
