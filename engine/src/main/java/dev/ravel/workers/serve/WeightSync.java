package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.model.WeightsFile;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * vLLM's native weight-update protocol (its {@code VLLM_SERVER_DEV_MODE} RL routes,
 * {@code vllm/entrypoints/rl/online/api_router.py} in vLLM 0.33) over Ravel's CPU transport, {@value #TRANSPORT}:
 * the trainer's side writes a {@link WeightsFile} where the server can read it and names it in
 * {@code update_info} ({@code path}, {@code sha256} of the file's bytes, {@code bytes}); the server reads it,
 * checks the digest and the vocabulary, and makes the engine serve it at {@code finish_weight_update}.
 *
 * <p>Routes, bodies and answers are vLLM's: {@code POST /pause?mode=abort|wait|keep&clear_cache=} ({@code abort}
 * ends the requests in flight, {@code wait} lets them finish; in both, new completions are answered 503 until
 * {@code /resume}; {@code keep} freezes running requests and queues new ones, and after the update they go on
 * with the new weights), {@code POST /resume}, {@code GET /is_paused}, {@code POST /init_weight_transfer_engine
 * {"init_info": {...}}}, {@code POST /start_weight_update}, {@code POST /update_weights {"update_info": ...}},
 * {@code POST /finish_weight_update {"weight_version": ...}}, {@code GET /weight_info},
 * {@code GET /get_world_size}. Calls out of order are refused as vLLM's worker refuses them (HTTP 500 with its
 * message): a start while an update is active, an update or a finish without a start. As in vLLM, a failed
 * update ends the update session. The weight version label ({@code finish_weight_update}'s) names the weights in
 * completions' {@code weight_versions}.
 */
final class WeightSync {
  private static final Logger LOG = LoggerFactory.getLogger(WeightSync.class);

  /** The transport Ravel defines for CPU: a weights file on storage the trainer's side and the server share. */
  static final String TRANSPORT = "ravel-file";
  /** The label of the weights a server starts with, before any update names its version: vLLM's. */
  static final String INITIAL_LABEL = "default";
  /** How vLLM's engine client prefixes a worker's refusal (the routes reach the worker by collective RPC). */
  static final String RPC_FAILED = "Call to collective_rpc method failed: ";
  /** vLLM's answer to a completion while paused ({@code abort}, {@code wait}), a 503. */
  static final String PAUSED = "Generation is paused. Please retry after it resumes.";
  /** How long {@code pause?mode=wait} waits for the requests in flight. */
  static final long DRAIN_TIMEOUT_MS = 600_000L;

  private static final Set<String> INIT_FIELDS = Set.of("transport");
  private static final Set<String> UPDATE_FIELDS = Set.of("path", "sha256", "bytes", "names", "dtype_names",
      "shapes");

  private final EmbeddedEngine engine;
  private final ServedModels models;
  private final Tokenizer tokenizer;
  /** Completions hold it shared while they are admitted and submitted; a pause takes it exclusively. */
  private final ReentrantReadWriteLock admission = new ReentrantReadWriteLock();
  /** Labels of the engine's weight versions (vLLM's weight version strings), by version. */
  private final Map<Long, String> labels = new ConcurrentHashMap<>();

  // guarded by this
  private String pauseMode; // null: not paused
  private boolean updateActive;
  private ModelWeights staged;
  private String label;

  WeightSync(EmbeddedEngine engine, ServedModels models, Tokenizer tokenizer) {
    this.engine = engine;
    this.models = models;
    this.tokenizer = tokenizer;
    this.label = INITIAL_LABEL;
    labels.put(models.currentVersion(), label);
  }

  /**
   * The label of engine weight version {@code version}: the one its update was finished with; for weights that came
   * another way (a LoRA load), the server's current label, as vLLM labels every token with its engine's version.
   */
  String label(long version) {
    String l = labels.get(version);
    if (l != null) {
      return l;
    }
    synchronized (this) {
      return label;
    }
  }

  /**
   * Runs {@code submit} unless new completions are refused (paused with {@code abort} or {@code wait}), so that a
   * pause never misses a request admitted before it.
   *
   * @throws ApiError 503 while paused so
   */
  <T> T admit(java.util.function.Supplier<T> submit) {
    admission.readLock().lock();
    try {
      String mode;
      synchronized (this) {
        mode = pauseMode;
      }
      if (mode != null && !mode.equals("keep")) {
        throw ApiError.unavailable(PAUSED);
      }
      return submit.get();
    } finally {
      admission.readLock().unlock();
    }
  }

  void pause(HttpExchange ex) throws IOException {
    Map<String, String> query = query(ex);
    String mode = query.getOrDefault("mode", "abort");
    if (!Set.of("abort", "wait", "keep").contains(mode)) {
      throw ApiError.badRequest("mode", "Input should be 'abort', 'wait' or 'keep' (got '" + mode + "')");
    }
    String clear = query.getOrDefault("clear_cache", "true").toLowerCase(Locale.ROOT);
    if (!Set.of("true", "false", "1", "0", "yes", "no", "on", "off").contains(clear)) {
      throw ApiError.badRequest("clear_cache", "Input should be a valid boolean (got '" + clear + "')");
    }
    admission.writeLock().lock();
    try {
      synchronized (this) {
        pauseMode = mode;
      }
    } finally {
      admission.writeLock().unlock();
    }
    switch (mode) {
      case "abort" -> {
        engine.abortAll();
        engine.pause();
      }
      case "wait" -> {
        if (!engine.awaitIdle(DRAIN_TIMEOUT_MS)) {
          throw ApiError.internal("Failed to pause generation: requests still running after "
              + DRAIN_TIMEOUT_MS / 1000 + " s");
        }
        engine.pause();
      }
      default -> engine.pause();
    }
    LOG.info("generation paused (mode {})", mode);
    Responses.json(ex, 200, Map.of("status", "paused"));
  }

  void resume(HttpExchange ex) throws IOException {
    synchronized (this) {
      pauseMode = null;
    }
    engine.resume();
    Responses.json(ex, 200, Map.of("status", "resumed"));
  }

  void isPaused(HttpExchange ex) throws IOException {
    boolean paused;
    synchronized (this) {
      paused = pauseMode != null;
    }
    Responses.json(ex, 200, Map.of("is_paused", paused));
  }

  void init(HttpExchange ex) throws IOException {
    JsonNode info = embedded(ex, "init_info");
    if (!info.isObject()) {
      throw ApiError.badRequest("init_info", "Input should be a valid dictionary (got " + info + ")");
    }
    unexpected(info, INIT_FIELDS, "init_info");
    JsonNode transport = info.path("transport");
    if (!transport.isMissingNode() && !TRANSPORT.equals(transport.asText())) {
      throw ApiError.badRequest("Invalid init_info for RavelFileTransfer: transport '" + transport.asText()
          + "' is not served here (this server reads weights from files: transport '" + TRANSPORT + "')");
    }
    Responses.json(ex, 200, Map.of("message", "Weight transfer initialized"));
  }

  void start(HttpExchange ex) throws IOException {
    synchronized (this) {
      if (updateActive) {
        throw ApiError.internal(RPC_FAILED + "start_weight_update called while a weight update is already active. Call"
            + " finish_weight_update first.");
      }
      updateActive = true;
      staged = null;
    }
    Responses.json(ex, 200, Map.of("message", "Weight update started"));
  }

  void update(HttpExchange ex) throws IOException {
    JsonNode info = embedded(ex, "update_info");
    if (info.isArray()) {
      // one entry per global worker rank; this server is one rank
      if (info.size() != 1) {
        throw ApiError.badRequest("update_info", "a list needs one entry per rank (this server has 1), got "
            + info.size());
      }
      info = info.get(0);
    }
    if (!info.isObject()) {
      throw ApiError.badRequest("update_info", "Input should be a valid dictionary or list (got " + info + ")");
    }
    synchronized (this) {
      if (!updateActive) {
        throw ApiError.internal(RPC_FAILED + "start_weight_update must be called before update_weights.");
      }
      try {
        staged = read(info);
      } catch (ApiError e) {
        updateActive = false; // as vLLM's worker: a failed update ends the session
        staged = null;
        throw e;
      }
    }
    Responses.json(ex, 200, Map.of("message", "Weights updated"));
  }

  void finish(HttpExchange ex) throws IOException {
    byte[] raw = ex.getRequestBody().readAllBytes();
    JsonNode versionNode = raw.length == 0 ? null : RequestParser.object(raw).get("weight_version");
    if (versionNode != null && !versionNode.isNull() && !versionNode.isTextual()) {
      throw ApiError.badRequest("weight_version", "Input should be a valid string (got " + versionNode + ")");
    }
    String version = versionNode == null || versionNode.isNull() ? null : versionNode.asText();
    ModelWeights next;
    synchronized (this) {
      if (!updateActive) {
        throw ApiError.internal(RPC_FAILED + "finish_weight_update called without a matching start_weight_update.");
      }
      next = staged;
      updateActive = false;
      staged = null;
      if (next != null) {
        if (version != null) {
          labels.put(next.version(), version);
          label = version;
        } else {
          labels.put(next.version(), label); // vLLM keeps the label it had when none is given
        }
        // the engine switches before its next iteration (after /resume when paused)
        engine.updateModel(TinyLm.of(next));
        models.updated(next.version());
      } else if (version != null) {
        label = version;
        labels.put(models.currentVersion(), version);
      }
    }
    LOG.info("weight update finished: {}", next == null ? "no weights sent" : "version " + next.version()
        + " labelled " + label(next.version()));
    Responses.json(ex, 200, Map.of("message", "Weight update finished"));
  }

  void weightInfo(HttpExchange ex) throws IOException {
    String current;
    synchronized (this) {
      current = label;
    }
    Responses.json(ex, 200, Map.of("weight_version", current));
  }

  void worldSize(HttpExchange ex) throws IOException {
    Responses.json(ex, 200, Map.of("world_size", 1));
  }

  /** The weights {@code info} names, checked: the file's digest and size when given, the vocabulary. */
  private ModelWeights read(JsonNode info) {
    unexpected(info, UPDATE_FIELDS, "update_info");
    JsonNode pathNode = info.get("path");
    if (pathNode == null || !pathNode.isTextual() || pathNode.asText().isBlank()) {
      throw ApiError.badRequest("Invalid update_info for RavelFileTransfer: 'path' (the weights file) is required");
    }
    Path file;
    try {
      file = Path.of(pathNode.asText());
    } catch (InvalidPathException e) {
      throw ApiError.badRequest("update_info.path: '" + pathNode.asText() + "' is not a valid path");
    }
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw ApiError.badRequest("update_info.path: cannot read " + file + ": " + e);
    }
    JsonNode size = info.get("bytes");
    if (size != null && size.asLong(-1) != bytes.length) {
      throw ApiError.badRequest("update_info.bytes: " + file + " holds " + bytes.length + " bytes, the sender said "
          + size);
    }
    JsonNode digest = info.get("sha256");
    if (digest != null && !digest.asText().equalsIgnoreCase(sha256(bytes))) {
      throw ApiError.badRequest("update_info.sha256: " + file + " does not have the digest the sender gave ("
          + digest.asText() + "): the file is not the one that was sent");
    }
    ModelWeights w;
    try {
      w = WeightsFile.read(file);
    } catch (IllegalArgumentException e) {
      throw ApiError.badRequest("update_info.path: " + e.getMessage());
    }
    if (w.spec().vocabSize() != tokenizer.vocabSize()) {
      throw ApiError.badRequest("update_info.path: weights file " + file + " has a vocabulary of "
          + w.spec().vocabSize() + " tokens, the server's tokenizer " + tokenizer.vocabSize());
    }
    return w;
  }

  /** The hex SHA-256 of {@code bytes}: what {@code update_info.sha256} names. */
  static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void unexpected(JsonNode info, Set<String> known, String field) {
    for (Iterator<String> it = info.fieldNames(); it.hasNext(); ) {
      String name = it.next();
      if (!known.contains(name)) {
        throw ApiError.badRequest("Invalid " + field + " for RavelFileTransfer: unexpected keyword argument '"
            + name + "' (known: " + String.join(", ", known.stream().sorted().toList()) + ")");
      }
    }
  }

  /** The value of {@code field} in a body {@code {"<field>": ...}} (FastAPI's {@code Body(embed=True)}). */
  private static JsonNode embedded(HttpExchange ex, String field) throws IOException {
    JsonNode body = RequestParser.object(ex.getRequestBody().readAllBytes());
    JsonNode v = body.get(field);
    if (v == null) {
      throw ApiError.badRequest("body." + field, "Field required");
    }
    return v;
  }

  private static Map<String, String> query(HttpExchange ex) {
    Map<String, String> out = new java.util.HashMap<>();
    String q = ex.getRequestURI().getRawQuery();
    if (q == null || q.isEmpty()) {
      return out;
    }
    for (String pair : q.split("&")) {
      int eq = pair.indexOf('=');
      String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
      String v = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      out.put(k, v);
    }
    return out;
  }
}
