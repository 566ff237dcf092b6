package dev.ravel.workers.generation.openai;

import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.generation.GenerationBackend;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.WeightsFile;
import io.opentelemetry.api.OpenTelemetry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link GenerationBackend} over inference servers that speak vLLM's OpenAI-compatible protocol (see
 * docs/openai-protocol.md): the servers given, or one the worker launches. Requests are spread round-robin
 * over the servers, each with the caller's trace context in {@code traceparent}, so the server's
 * {@code llm_request} span is a child of the worker's call. New weights go to every server through vLLM's
 * runtime LoRA route: written to a weights file, loaded as adapter {@code <model>-<tag>-v<version>} (the tag names
 * the run and its attempt, so that runs sharing a server never take each other's adapters:
 * {@link ServerBackendSpec#adapterName}), confirmed in {@code /v1/models}, and from then on requested by that name; the adapter before it stays loaded (requests
 * already sent under it still resolve) and older ones are unloaded. A request that fails is an
 * {@link FinishReason#ERROR} result with the server's message (and an ERROR span); it is not retried.
 */
public final class OpenAiBackend implements GenerationBackend {
  private static final Logger LOG = LoggerFactory.getLogger(OpenAiBackend.class);

  private final ServerBackendSpec spec;
  private final String modelName;
  private final int kvTokenBudget;
  /** The servers' clients; a launched server's is replaced when the server is started again. */
  private final List<ServerClient> clients;
  private volatile LaunchedServer launched;
  /** Starts the launched server again (a template launch, vLLM's): null when this backend launched none. */
  private java.util.function.Supplier<LaunchedServer> relaunch;
  /** A client for a server at a base URL, as the first ones were made. */
  private java.util.function.Function<String, ServerClient> clientFor;
  /** The last native load asked of the servers (its version and {@code update_info}), for a restarted one. */
  private volatile LoadedWeights lastLoad;
  /** How many times the launched server was started again after it died. */
  private final AtomicInteger restarts = new AtomicInteger();

  /** A native load: the version and vLLM's {@code update_info}. */
  private record LoadedWeights(long version, Map<String, Object> updateInfo) {}
  /** The run's OTLP receiver for the launched server's spans; null when it exports none (or none was launched). */
  private OtlpReceiver receiver;
  private final Path weightsDir;
  private final AtomicInteger next = new AtomicInteger();
  private final Deque<Long> loadedVersions = new ArrayDeque<>();
  private volatile Served served;
  private boolean closed;
  /** The stage spans of a refit ({@code rl.refit.*}, group refit); no-op until {@link #spans(Spans)}. */
  private volatile dev.ravel.telemetry.spans.Spans spans = dev.ravel.telemetry.spans.Spans.noop();
  /** Held while a native refit pauses the servers ({@code wait}): this worker's new requests wait for it. */
  private final java.util.concurrent.locks.ReentrantReadWriteLock refitGate =
      new java.util.concurrent.locks.ReentrantReadWriteLock(true);

  private final ExecutorService httpExecutor;
  private final MetricsScraper scraper;
  private final ServerMetricsRecorder recorder;
  /** Each server's last scrape, by base URL: the next delta is taken from it. */
  private final Map<String, ServerMetrics> lastScrape = new java.util.LinkedHashMap<>();
  /** The KV budget of each server when this worker launched it (known); 0 when configured elsewhere. */
  private final int serverKvBudget;

  private final AtomicLongArray finished = new AtomicLongArray(FinishReason.values().length);
  private final AtomicLong promptTokens = new AtomicLong();
  private final AtomicLong generationTokens = new AtomicLong();

  /** The model name and weight version requests are sent under. */
  private record Served(String model, long version) {}

  private OpenAiBackend(ServerBackendSpec spec, String modelName, int kvTokenBudget, List<ServerClient> clients,
      LaunchedServer launched, Path weightsDir, long initialVersion, ExecutorService httpExecutor,
      MetricsScraper scraper, ServerMetricsRecorder recorder) {
    this.spec = spec;
    this.httpExecutor = httpExecutor;
    this.scraper = scraper;
    this.recorder = recorder;
    this.serverKvBudget = launched != null && spec.launch().equals(ServerBackendSpec.LAUNCH_RAVEL) ? kvTokenBudget : 0;
    this.modelName = modelName;
    this.kvTokenBudget = kvTokenBudget;
    this.clients = new java.util.concurrent.CopyOnWriteArrayList<>(clients);
    this.launched = launched;
    this.weightsDir = weightsDir;
    this.served = new Served(modelName, initialVersion);
  }

  /**
   * Connects to the spec's servers (each must answer {@code /health}), or launches one and waits for it.
   *
   * @param modelName the served model's name ({@code ravel serve}'s {@code --model-name})
   * @param initial the weights a launched server starts with, and whose version results carry until the first update
   * @param logDir where a launched server's log goes (the run folder)
   * @throws IllegalStateException naming the server's URL when one is down, or why a launch failed
   */
  public static OpenAiBackend start(ServerBackendSpec spec, String modelName, ModelWeights initial,
      int kvTokenBudget, int maxRunningRequests, OpenTelemetry otel, Path logDir) {
    return start(spec, modelName, initial, kvTokenBudget, maxRunningRequests, otel, logDir, id -> true);
  }

  /**
   * As above; {@code traced} decides by its id whether an HTTP request's {@code traceparent} is sent sampled (a
   * server whose tracer is parent-based, as vLLM's, traces exactly those): the engine sampler's ratio rule,
   * {@link #tracedByRatio}.
   */
  public static OpenAiBackend start(ServerBackendSpec spec, String modelName, ModelWeights initial,
      int kvTokenBudget, int maxRunningRequests, OpenTelemetry otel, Path logDir,
      java.util.function.Predicate<String> traced) {
    return start(spec, modelName, initial, kvTokenBudget, maxRunningRequests, otel, logDir, traced, Map.of(), true,
        java.util.Optional::empty);
  }

  /**
   * As above; a launch command that names {@value #OTLP_ENDPOINT} gets the endpoint of the run's own OTLP receiver
   * there ({@link OtlpReceiver}, on a loopback port of this node), which gives what the launched server exports
   * {@code serverResource}'s attributes on its resource, writes it into {@code logDir} when {@code spanFiles}, and
   * sends it on to the run's OTLP backend through {@code relay} when it gives one (the worker's own OTLP settings;
   * closed with the backend), counting both.
   */
  public static OpenAiBackend start(ServerBackendSpec spec, String modelName, ModelWeights initial,
      int kvTokenBudget, int maxRunningRequests, OpenTelemetry otel, Path logDir,
      java.util.function.Predicate<String> traced, Map<String, String> serverResource, boolean spanFiles,
      java.util.function.Supplier<java.util.Optional<dev.ravel.telemetry.sdk.SpanRelay>> relay) {
    OtlpReceiver receiver = null;
    if (spec.launchCommand().contains(OTLP_ENDPOINT)) {
      dev.ravel.telemetry.sdk.SpanRelay r = relay.get().orElse(null);
      if (spanFiles || r != null) {
        receiver = OtlpReceiver.start(spanFiles ? logDir : null, r, serverResource);
      }
    }
    try {
      OpenAiBackend b = startWith(spec, modelName, initial, kvTokenBudget, maxRunningRequests, otel, logDir, traced,
          receiver);
      b.receiver = receiver;
      return b;
    } catch (RuntimeException e) {
      if (receiver != null) {
        // the run stops at start: what a server that failed exported is in no count, so not in the run folder either
        // (what the relay had sent on by then is at the backend, uncounted)
        receiver.close();
        try {
          if (receiver.file() != null) {
            Files.deleteIfExists(receiver.file());
          }
        } catch (IOException gone) {
          LOG.warn("could not remove {}: {}", receiver.file(), gone.toString());
        }
      }
      throw e;
    }
  }

  /** The placeholder of a launch command that becomes the run's OTLP traces endpoint for the server it launches. */
  public static final String OTLP_ENDPOINT = "{otlp_traces_endpoint}";

  private static OpenAiBackend startWith(ServerBackendSpec spec, String modelName, ModelWeights initial,
      int kvTokenBudget, int maxRunningRequests, OpenTelemetry otel, Path logDir,
      java.util.function.Predicate<String> traced, OtlpReceiver receiver) {
    // the client's own tasks and the threads that send requests and wait for their responses
    ExecutorService httpExecutor = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "ravel-http-client");
      t.setDaemon(true);
      return t;
    });
    HttpClient http = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(spec.connectTimeout())
        .executor(httpExecutor)
        .build();
    Path weightsDir;
    try {
      weightsDir = Files.createTempDirectory("ravel-weights-");
    } catch (IOException e) {
      throw new IllegalStateException("cannot create a folder for weight files: " + e.getMessage(), e);
    }
    LongSupplier clock = epochClock();
    var tracer = otel.getTracer(EngineNames.INSTRUMENTATION_SCOPE);
    LaunchedServer launched = null;
    List<String> urls = spec.servers();
    java.util.function.Consumer<String> health = url -> new ServerClient(url, http, Runnable::run, 1,
        spec.connectTimeout(), tracer, clock).checkHealth(spec.connectTimeout());
    // a template launch (vLLM's), with the run's receiver's endpoint in it: the first server, and any started again
    String command = spec.launchCommand().replace(OTLP_ENDPOINT, receiver == null ? "" : receiver.endpoint());
    java.util.function.Supplier<LaunchedServer> launchTemplate = () -> LaunchedServer.fromTemplate(command, modelName,
        logDir, spec.launchTimeout(), health);
    // the run's start-up trace: under the worker's rl.worker.start_backend when there is one, else no span at all
    dev.ravel.telemetry.spans.Spans startup = dev.ravel.telemetry.spans.Spans.create(otel,
        java.util.EnumSet.of(dev.ravel.telemetry.config.SpanGroup.WORKER));
    if (spec.launches()) {
      try (var s = startup.startChild(dev.ravel.telemetry.config.SpanGroup.WORKER,
          dev.ravel.telemetry.spans.SpanNames.WORKER_LAUNCH_SERVER, io.opentelemetry.context.Context.current())) {
        if (spec.launch().equals(ServerBackendSpec.LAUNCH_RAVEL)) {
          if (initial == null) {
            throw new IllegalArgumentException("launch: ravel serves Ravel's TinyLm, which needs the Java trainer's"
                + " initial weights");
          }
          Path w = WeightsFile.write(weightsDir.resolve("weights-v" + initial.version() + ".bin"), initial);
          launched = LaunchedServer.ravel(modelName, w, kvTokenBudget, maxRunningRequests, spec.serverHeapMb(),
              logDir, spec.launchTimeout(), health, spec.recordExchanges());
        } else {
          // not given this span as its TRACEPARENT: vLLM seeds Python's random in its engine processes, which the
          // OpenTelemetry SDK draws span ids from, so two servers in one trace would export the same span ids; its
          // loading comes as a trace of its own, which ravel trace --startup places under this span
          // (process.parent_pid, which the run's receiver writes)
          launched = launchTemplate.get();
        }
      }
      urls = List.of(launched.url());
    }
    List<ServerClient> clients = new ArrayList<>();
    for (String url : urls) {
      ServerClient c = new ServerClient(url, http, httpExecutor, spec.maxInFlight(), spec.requestTimeout(), tracer,
          clock, traced).labelsAreVersions(spec.refit() && spec.nativeSync());
      if (launched == null) {
        c.checkHealth(spec.connectTimeout());
      }
      clients.add(c);
    }
    OpenAiBackend backend = new OpenAiBackend(spec, modelName, kvTokenBudget, clients, launched, weightsDir,
        initial == null ? 0 : initial.version(), httpExecutor, new MetricsScraper(http, spec.connectTimeout().plusSeconds(10)),
        new ServerMetricsRecorder(otel.getMeter(EngineNames.INSTRUMENTATION_SCOPE), modelName));
    backend.clientFor = url -> new ServerClient(url, http, httpExecutor, spec.maxInFlight(), spec.requestTimeout(),
        tracer, clock, traced).labelsAreVersions(spec.refit() && spec.nativeSync());
    if (launched != null && !spec.launch().equals(ServerBackendSpec.LAUNCH_RAVEL)) {
      backend.relaunch = launchTemplate;
    }
    backend.scrapeAll(false); // the baseline: what the servers did before this run is not this run's
    if (spec.refit() && !spec.nativeSync() && launched == null && initial != null) {
      // LoRA: until its first refit a run would request the base model, which a shared server may have had replaced
      // (another run's native update); its initial weights go in as its first adapter instead
      try {
        backend.updateWeights(initial);
      } catch (RuntimeException e) {
        backend.close();
        throw e;
      }
    }
    if (spec.refit() && spec.nativeSync() && spec.refitOwner()) {
      try {
        try (var s = startup.startChild(dev.ravel.telemetry.config.SpanGroup.WORKER,
            dev.ravel.telemetry.spans.SpanNames.WORKER_INIT_WEIGHT_TRANSFER, io.opentelemetry.context.Context.current())) {
          backend.initWeightTransfer();
        }
        // without initial weights (a Python trainer's), the driver loads the trainer's first file before any step
        if (launched == null && initial != null) {
          // servers of the user's serve whatever they last loaded (another run's weights, their own model): the
          // run's first requests must come from its own initial weights
          backend.nativeUpdate(initial);
        }
      } catch (RuntimeException e) {
        backend.close();
        throw e;
      }
    }
    return backend;
  }

  /**
   * Scrapes every server's {@code /metrics} and, when {@code record}, records what changed since the last
   * scrape into the run's metrics. A server whose metrics cannot be read is logged and skipped (its next
   * delta then covers both periods): telemetry never fails a step.
   */
  private synchronized void scrapeAll(boolean record) {
    for (ServerClient c : clients) {
      URI uri = URI.create(c.baseUrl());
      try {
        ServerMetrics now = scraper.scrape(uri);
        if (record) {
          recorder.record(uri, now.minus(lastScrape.getOrDefault(c.baseUrl(), ServerMetrics.empty(c.baseUrl()))));
        }
        lastScrape.put(c.baseUrl(), now);
      } catch (RuntimeException e) {
        LOG.warn("could not scrape the metrics of {}: {}", c.baseUrl(), e.getMessage());
      }
    }
  }

  /**
   * Checks that every server {@code spec} names answers {@code GET /health} (within the connect timeout),
   * so that a server that is down is reported before any actor starts.
   *
   * @throws dev.ravel.telemetry.config.ConfigException {@code servers: <url> is not reachable (...)} (the key less its section)
   */
  public static void checkServers(ServerBackendSpec spec) {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(spec.connectTimeout()).build();
    for (String url : spec.servers()) {
      try {
        new ServerClient(url, http, Runnable::run, 1, spec.connectTimeout(),
            OpenTelemetry.noop().getTracer("check"), epochClock())
            .checkHealth(spec.connectTimeout());
      } catch (IllegalStateException e) {
        throw new dev.ravel.telemetry.config.ConfigException("servers", e.getMessage());
      }
    }
  }

  private static LongSupplier epochClock() {
    Instant now = Instant.now();
    long baseNano = System.nanoTime();
    long baseEpoch = now.getEpochSecond() * 1_000_000_000L + now.getNano();
    return () -> baseEpoch + (System.nanoTime() - baseNano);
  }

  /** The servers' base URLs. */
  public List<String> servers() {
    return clients.stream().map(ServerClient::baseUrl).toList();
  }

  @Override
  public synchronized ExportStats launchedSpanCounts() {
    if (launched == null || !closed) {
      return ExportStats.NONE;
    }
    ExportStats own = launched.spanCounts().orElse(ExportStats.NONE);
    return receiver == null ? own : own.plus(receiver.counts());
  }

  /**
   * The servers' tracing decision by the engine sampler's ratio rule: a request is sent sampled when engine
   * tracing is on and its id falls in {@code ratio}'s share ({@link dev.ravel.workers.engine.RequestSampler#inRatio},
   * the hash the embedded engine uses). A server cannot keep errors or slow requests after the fact this way: its
   * tracer decides when the request arrives.
   */
  public static java.util.function.Predicate<String> tracedByRatio(boolean tracing, double ratio) {
    return id -> tracing && dev.ravel.workers.engine.RequestSampler.inRatio(id, ratio);
  }

  /** The PID of the server this backend launched, or -1. */
  public long launchedPid() {
    return launched == null ? -1 : launched.pid();
  }

  /**
   * Sends each GRPO group ({@link #groups}) as one request with {@code n} choices, the others one by one;
   * results in request order.
   */
  @Override
  public List<GenerationResult> generate(List<GenerationRequest> requests) {
    Served s = served;
    LaunchedServer server = launched;
    List<List<GenerationRequest>> groups = groups(requests);
    List<CompletableFuture<List<GenerationResult>>> futures = new ArrayList<>();
    for (List<GenerationRequest> group : groups) {
      futures.add(send(group, s));
    }
    List<List<GenerationResult>> answers = new ArrayList<>();
    futures.forEach(f -> answers.add(f.join()));
    // a launched server that died under these requests is started again with the current weights, and the groups
    // that failed are sent again, once: the same seeds on the same weights give the same samples
    if (answers.stream().flatMap(List::stream).anyMatch(r -> !r.succeeded()) && restartIfDead(server)) {
      List<CompletableFuture<List<GenerationResult>>> again = new ArrayList<>();
      for (int i = 0; i < groups.size(); i++) {
        boolean failed = answers.get(i).stream().anyMatch(r -> !r.succeeded());
        again.add(failed ? send(groups.get(i), served) : CompletableFuture.completedFuture(answers.get(i)));
      }
      answers.clear();
      again.forEach(f -> answers.add(f.join()));
    }
    List<GenerationResult> results = new ArrayList<>(requests.size());
    answers.forEach(a -> a.forEach(r -> results.add(count(r))));
    return results;
  }

  /**
   * Starts the launched server again when {@code seen} (the server a caller used) has died: the process killed
   * or crashed, its leftover processes stopped by their recorded identities, a new one launched (waited on within
   * {@code launch_timeout_s}), Ravel's weight transfer initialised and the last weights loaded with their version,
   * all while this worker's new requests wait. A span {@code rl.worker.server_restart} says when, which process
   * died and which replaced it. Returns whether a server is there to send to again: false when this backend
   * launched none, or the one it has is alive (the failure was something else).
   */
  private boolean restartIfDead(LaunchedServer seen) {
    if (seen == null || relaunch == null) {
      return false;
    }
    synchronized (this) {
      if (closed) {
        return false;
      }
      if (launched != seen) {
        return true; // another call already started it again
      }
      if (seen.alive()) {
        return false;
      }
      refitGate.writeLock().lock();
      try (var s = spans.start(dev.ravel.telemetry.config.SpanGroup.WORKER,
          dev.ravel.telemetry.spans.SpanNames.SERVER_RESTART)) {
        s.set(dev.ravel.telemetry.spans.RavelAttributes.FAULT_DEAD_PID, seen.pid());
        LOG.warn("inference server pid {} ({}) died; starting it again", seen.pid(), seen.url());
        seen.close();
        LaunchedServer fresh = relaunch.get();
        ServerClient c = clientFor.apply(fresh.url());
        launched = fresh;
        clients.set(clients.indexOf(clientOf(seen)), c);
        if (spec.refit() && spec.nativeSync()) {
          c.initWeightTransfer(INIT_INFO);
          LoadedWeights w = lastLoad;
          if (w != null) {
            c.pause("wait");
            try {
              c.startWeightUpdate();
              c.updateWeights(w.updateInfo());
              c.finishWeightUpdate(Long.toString(w.version()));
            } finally {
              c.resume();
            }
          }
        }
        s.set(dev.ravel.telemetry.spans.RavelAttributes.PROCESS_PID, fresh.pid());
        restarts.incrementAndGet();
        LOG.info("inference server started again: pid {} at {}", fresh.pid(), fresh.url());
        return true;
      } finally {
        refitGate.writeLock().unlock();
      }
    }
  }

  private ServerClient clientOf(LaunchedServer server) {
    return clients.stream().filter(c -> c.baseUrl().equals(server.url())).findFirst()
        .orElseThrow(() -> new IllegalStateException("no client for the launched server " + server.url()));
  }

  /** How many times the launched server died and was started again. */
  public int serverRestarts() {
    return restarts.get();
  }

  @Override
  public GenerationResult generate(GenerationRequest request) {
    return count(send(List.of(request), served).join().get(0));
  }

  private CompletableFuture<List<GenerationResult>> send(List<GenerationRequest> group, Served s) {
    ServerClient c = clients.get(Math.floorMod(next.getAndIncrement(), clients.size()));
    // a refit that pauses the servers (mode wait) holds the gate: requests wait here rather than being refused;
    // the version is read after the gate, so a request sent after a refit names the new weights
    refitGate.readLock().lock();
    try {
      Served now = served;
      return c.complete(group, now.model(), now.version());
    } finally {
      refitGate.readLock().unlock();
    }
  }

  /** Where the stage spans of each refit go (the worker's own {@link dev.ravel.telemetry.spans.Spans}). */
  public OpenAiBackend spans(dev.ravel.telemetry.spans.Spans s) {
    this.spans = s == null ? dev.ravel.telemetry.spans.Spans.noop() : s;
    return this;
  }

  /** What a native refit writes in {@code init_info}: the transport Ravel's CPU path speaks. */
  static final Map<String, Object> INIT_INFO = Map.of("transport", "ravel-file");

  /**
   * {@code requests} cut into runs that one request with {@code n} choices reproduces exactly, as a server
   * seeds choice i with the request's seed + i: consecutive requests {@code <id>-0, <id>-1, ...} with the
   * same prompt, sampling (but the seed, which counts up by one) and trace context. Any other request is a
   * run of its own.
   */
  static List<List<GenerationRequest>> groups(List<GenerationRequest> requests) {
    List<List<GenerationRequest>> out = new ArrayList<>();
    int i = 0;
    while (i < requests.size()) {
      GenerationRequest first = requests.get(i);
      int j = i + 1;
      if (first.requestId().endsWith("-0")) {
        String id = ServerClient.groupId(first);
        while (j < requests.size() && sameGroup(first, id, requests.get(j), j - i)) {
          j++;
        }
      }
      out.add(List.copyOf(requests.subList(i, j)));
      i = j;
    }
    return out;
  }

  private static boolean sameGroup(GenerationRequest first, String id, GenerationRequest r, int k) {
    return r.requestId().equals(id + "-" + k) && r.params().seed() == first.params().seed() + k
        && r.params().equals(first.params().withSeed(r.params().seed()))
        && r.carrier().equals(first.carrier()) && Arrays.equals(r.promptTokens(), first.promptTokens());
  }

  private GenerationResult count(GenerationResult r) {
    finished.incrementAndGet(r.finishReason().ordinal());
    promptTokens.addAndGet(r.stats().promptTokens());
    generationTokens.addAndGet(r.stats().completionTokens());
    return r;
  }

  /**
   * vLLM's {@code POST /init_weight_transfer_engine} on every server, with Ravel's transport: a server whose
   * transfer engine speaks another (vLLM's NCCL engine, whose sender is a GPU trainer) refuses it here, at start.
   */
  private void initWeightTransfer() {
    for (ServerClient c : clients) {
      try {
        c.initWeightTransfer(INIT_INFO);
      } catch (IllegalStateException e) {
        throw new IllegalStateException(c.baseUrl() + " refused Ravel's weight transfer (" + e.getMessage()
            + "). generation.weight_sync: native needs a server that reads weights files: ravel serve, or vLLM with"
            + " Ravel's plugin (pip install workers/src/main/vllm-plugin) started with --weight-transfer-config"
            + " '{\"backend\":\"ravel-file\"}' and VLLM_SERVER_DEV_MODE=1; or use generation.weight_sync: lora for"
            + " a server with runtime LoRA updating, or generation.refit: false", e);
      }
    }
  }

  /**
   * Makes every server serve {@code weights} and sends later requests under them. Native ({@code
   * generation.weight_sync: native}, the default): vLLM's weight-update protocol on every server, stage by stage,
   * {@code pause} ({@code wait}: requests in flight finish first and this worker's new ones wait; {@code keep} with
   * in-flight updates), {@code start_weight_update}, {@code update_weights} naming the weights file,
   * {@code finish_weight_update} with the version, {@code resume} (also after a failure, so that no server is
   * left paused). LoRA: loaded as adapter {@code <model>-<tag>-v<version>}, confirmed in {@code /v1/models}.
   * With refit off, only the version results are labelled with changes.
   *
   * @throws IllegalStateException with the server's URL and message when a server refuses
   */
  @Override
  public synchronized long updateWeights(ModelWeights weights) {
    scrapeAll(true); // a step's engine metrics: what the servers did since the last weights
    long version = weights.version();
    if (!spec.refit()) {
      served = new Served(served.model(), version);
      return version; // the servers keep their weights: only the label changes
    }
    if (spec.nativeSync()) {
      if (!spec.refitOwner()) {
        // another worker of the run drives the shared servers' updates (the driver waits for both); the servers
        // label what they sample, so a request that reaches one before its update says so
        served = new Served(modelName, version);
        return version;
      }
      return nativeUpdate(weights);
    }
    String name = adapterName(version);
    Path file = digestNamed(WeightsFile.write(weightsDir.resolve("weights-v" + version + ".bin"), weights), version);
    String digestTag = file.getFileName().toString();
    List<CompletableFuture<Void>> loads = new ArrayList<>();
    for (ServerClient c : clients) {
      loads.add(CompletableFuture.runAsync(() -> {
        try {
          c.loadAdapter(name, file.toString());
        } catch (IllegalStateException refused) {
          // a server shared with another worker of this run attempt (the name is the attempt's own) may have loaded
          // this version already: fine when it holds the same weights (its file is named by the same digest); a
          // name taken by other weights, or any other refusal, fails the refit
          String root = c.modelRoots().get(name);
          if (root == null) {
            throw refused;
          }
          if (!Path.of(root).getFileName().toString().equals(digestTag)) {
            throw new IllegalStateException(c.baseUrl() + " already serves adapter " + name + " with other weights"
                + " (loaded from " + root + ", this version's file is " + digestTag + "): refusing to train against"
                + " weights that are not this run's", refused);
          }
        }
        if (!c.models().contains(name)) {
          throw new IllegalStateException(c.baseUrl() + " accepted adapter " + name
              + " but does not list it in /v1/models");
        }
      }));
    }
    try {
      CompletableFuture.allOf(loads.toArray(CompletableFuture[]::new)).join();
    } catch (java.util.concurrent.CompletionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new IllegalStateException("loading weight version " + version + ": " + cause.getMessage(), cause);
    }
    served = new Served(name, version);
    loadedVersions.addLast(version);
    // keep the adapter before this one: requests already sent under its name must still resolve
    while (loadedVersions.size() > 2) {
      long old = loadedVersions.removeFirst();
      for (ServerClient c : clients) {
        try {
          c.unloadAdapter(adapterName(old));
        } catch (IllegalStateException e) {
          LOG.warn("could not unload adapter {}: {}", adapterName(old), e.getMessage());
        }
      }
      deleteVersionFiles(old);
    }
    return version; // every server lists the adapter of this version in /v1/models (checked above)
  }

  /**
   * Makes every server serve the weights in {@code file} (a Python trainer's, written where the servers read it)
   * through vLLM's native protocol, stage by stage as {@link #updateWeights(ModelWeights)} does; the file is the
   * trainer's and stays. With refit off, or on a worker that does not drive its shared servers, only the label
   * changes.
   *
   * @throws IllegalStateException with the server's URL and message when a server refuses
   */
  @Override
  public synchronized long updateWeights(dev.ravel.workers.generation.WeightsFileRef file) {
    scrapeAll(true);
    long version = file.version();
    if (!spec.refit() || !spec.refitOwner()) {
      served = new Served(modelName, version);
      return version;
    }
    if (!spec.nativeSync()) {
      throw new IllegalStateException("weight_sync: lora loads PEFT adapters, which a Python trainer does not write:"
          + " use weight_sync: native");
    }
    return nativeLoad(version, file.updateInfo(), file.bytes());
  }

  private long nativeUpdate(ModelWeights weights) {
    long version = weights.version();
    Path file;
    long bytes;
    String digest;
    try (var s = spans.start(dev.ravel.telemetry.config.SpanGroup.REFIT, dev.ravel.telemetry.spans.SpanNames.REFIT_TRANSFER)) {
      file = WeightsFile.write(weightsDir.resolve("weights-v" + version + ".bin"), weights);
      byte[] content;
      try {
        content = Files.readAllBytes(file);
      } catch (IOException e) {
        throw new IllegalStateException("cannot read back the weights file " + file + ": " + e.getMessage(), e);
      }
      bytes = content.length;
      digest = sha256(content);
      s.set(dev.ravel.telemetry.spans.RavelAttributes.REFIT_BYTES, bytes);
      s.set(dev.ravel.telemetry.spans.RavelAttributes.REFIT_TRANSPORT, "ravel-file");
    }
    nativeLoad(version, Map.of("path", file.toString(), "sha256", digest, "bytes", bytes), bytes);
    // the file of the version before stays: a server could still be reading it only if its update failed
    loadedVersions.addLast(version);
    while (loadedVersions.size() > 2) {
      deleteVersionFiles(loadedVersions.removeFirst());
    }
    return version;
  }

  /**
   * Pause, start, update ({@code updateInfo}), finish with {@code version}, resume: on every server, stage by stage.
   * A launched server that died meanwhile is started again with these weights ({@link #restartIfDead}).
   */
  private long nativeLoad(long version, Map<String, Object> updateInfo, long bytes) {
    LaunchedServer server = launched;
    lastLoad = new LoadedWeights(version, updateInfo);
    try {
      return nativeLoadOnce(version, updateInfo, bytes);
    } catch (RuntimeException e) {
      if (restartIfDead(server)) {
        served = new Served(modelName, version);
        return version;
      }
      throw e;
    }
  }

  private long nativeLoadOnce(long version, Map<String, Object> updateInfo, long bytes) {
    String mode = spec.pauseMode();
    boolean gate = !"keep".equals(mode);
    if (gate) {
      refitGate.writeLock().lock();
    }
    boolean paused = false;
    try {
      try (var s = spans.start(dev.ravel.telemetry.config.SpanGroup.REFIT, dev.ravel.telemetry.spans.SpanNames.REFIT_PAUSE)) {
        s.set(dev.ravel.telemetry.spans.RavelAttributes.REFIT_PAUSE_MODE, mode);
        paused = true; // from here on, resume every server whatever happens
        onEveryServer("pause (mode " + mode + ")", c -> c.pause(mode));
      }
      try (var s = spans.start(dev.ravel.telemetry.config.SpanGroup.REFIT, dev.ravel.telemetry.spans.SpanNames.REFIT_LOAD)) {
        s.set(dev.ravel.telemetry.spans.RavelAttributes.REFIT_BYTES, bytes * clients.size());
        s.set(dev.ravel.telemetry.spans.RavelAttributes.WEIGHT_VERSION, version);
        onEveryServer("start_weight_update", ServerClient::startWeightUpdate);
        onEveryServer("update_weights", c -> c.updateWeights(updateInfo));
        onEveryServer("finish_weight_update", c -> c.finishWeightUpdate(Long.toString(version)));
      }
      served = new Served(modelName, version);
    } finally {
      try {
        if (paused) {
          try (var s = spans.start(dev.ravel.telemetry.config.SpanGroup.REFIT, dev.ravel.telemetry.spans.SpanNames.REFIT_RESUME)) {
            onEveryServer("resume", ServerClient::resume);
          }
        }
      } finally {
        if (gate) {
          refitGate.writeLock().unlock();
        }
      }
    }
    return version;
  }

  /** Runs {@code call} on every server at once; the first failure, named by stage and server, once all are done. */
  private void onEveryServer(String stage, java.util.function.Consumer<ServerClient> call) {
    List<CompletableFuture<Void>> calls = new ArrayList<>();
    for (ServerClient c : clients) {
      calls.add(CompletableFuture.runAsync(() -> call.accept(c), httpExecutor));
    }
    try {
      CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).join();
    } catch (java.util.concurrent.CompletionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new IllegalStateException("weight update, " + stage + ": " + cause.getMessage(), cause);
    }
  }

  /**
   * {@code file} renamed {@code weights-v<version>-<first 16 hex digits of its SHA-256>.bin}: its name says which
   * weights it holds, so that a server's record of where an adapter came from tells its weights apart.
   */
  private static Path digestNamed(Path file, long version) {
    try {
      String digest = sha256(Files.readAllBytes(file)).substring(0, 16);
      return Files.move(file, file.resolveSibling("weights-v" + version + "-" + digest + ".bin"),
          java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new IllegalStateException("cannot name the weights file " + file + " by its digest: " + e.getMessage(), e);
    }
  }

  /** Deletes the weight files of {@code version} (named by version, with or without a digest). */
  private void deleteVersionFiles(long version) {
    try (Stream<Path> files = Files.list(weightsDir)) {
      files.filter(f -> {
        String n = f.getFileName().toString();
        return n.equals("weights-v" + version + ".bin") || n.startsWith("weights-v" + version + "-");
      }).forEach(OpenAiBackend::deleteQuietly);
    } catch (IOException e) {
      LOG.debug("could not list {}: {}", weightsDir, e.toString());
    }
  }

  static String sha256(byte[] content) {
    try {
      return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(content));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private String adapterName(long version) {
    return spec.adapterName(modelName, version);
  }

  /**
   * This worker's requests (finished by reason, prompt and generation tokens: exact, counted from the
   * responses) beside its servers' preemptions since this worker started, running and waiting requests and
   * KV usage (from a fresh scrape of their {@code /metrics}, recorded as the last period's delta too).
   * Servers shared with other workers (fewer servers than workers) report their whole load to each.
   */
  @Override
  public EngineStats stats() {
    scrapeAll(true);
    EngineStats server;
    synchronized (this) {
      server = ServerMetrics.toEngineStats(lastScrape.values(), serverKvBudget);
    }
    EngineStats.Builder b = EngineStats.builder()
        .preemptions(server.preemptions())
        .running(server.running())
        .waiting(server.waiting())
        .kvTokens(server.kvTokensUsed(), server.kvTokenBudget())
        .tokens(promptTokens.get(), generationTokens.get())
        .queue(server.queueNanos(), server.queueCount()) // the servers' own; no load integrals over HTTP
        .spans(0, 0);
    for (FinishReason r : FinishReason.values()) {
      b.finished(r, finished.get(r.ordinal()));
    }
    return b.build();
  }

  /**
   * Records the servers' last period (a final scrape), then stops what this backend started: a launched
   * server by its PID, the HTTP threads, the weight files. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    scrapeAll(true);
    recorder.close();
    httpExecutor.shutdown();
    if (launched != null) {
      launched.close();
    }
    if (receiver != null) { // after the server: what it flushed as it stopped is in
      receiver.close();
    }
    try (Stream<Path> files = Files.list(weightsDir)) {
      files.forEach(OpenAiBackend::deleteQuietly);
    } catch (IOException e) {
      // nothing to clean
    }
    deleteQuietly(weightsDir);
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      LOG.debug("could not delete {}: {}", p, e.toString());
    }
  }
}
