package dev.ravel.workers.serve;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The names this server answers to: the base model (always served with the engine's current weights) and
 * the loaded adapters (vLLM's runtime LoRA names), each bound to the weight version it loaded. The server
 * holds one weight version: a request for any loaded name is served with the engine's current weights, as
 * the embedded engine serves a request that spans a weight update with the newer weights (the version that
 * produced it is on its {@code llm_request} span). So a client that sent a request under the previous
 * adapter's name just before loading a new one still gets an answer, as from vLLM, which keeps both loaded.
 * Thread-safe.
 */
final class ServedModels {
  /** A loaded adapter: its name, where it was read from, its weight version and when it was loaded. */
  record Adapter(String name, String path, long version, long createdEpochSeconds) {}

  private final String baseName;
  private final long createdEpochSeconds;
  private final Map<String, Adapter> adapters = new LinkedHashMap<>();
  private long currentVersion;

  ServedModels(String baseName, long initialVersion, long createdEpochSeconds) {
    this.baseName = baseName;
    this.currentVersion = initialVersion;
    this.createdEpochSeconds = createdEpochSeconds;
  }

  String baseName() {
    return baseName;
  }

  long createdEpochSeconds() {
    return createdEpochSeconds;
  }

  synchronized long currentVersion() {
    return currentVersion;
  }

  synchronized boolean has(String name) {
    return adapters.containsKey(name);
  }

  /** Records that the engine now serves {@code adapter}'s version under its name. */
  synchronized void loaded(Adapter adapter) {
    adapters.put(adapter.name(), adapter);
    currentVersion = adapter.version();
  }

  /** Records that the engine now serves weight version {@code version} under the base name (a native update). */
  synchronized void updated(long version) {
    currentVersion = version;
  }

  /** Forgets {@code name}; false when it was not loaded. */
  synchronized boolean unload(String name) {
    return adapters.remove(name) != null;
  }

  synchronized List<Adapter> adapters() {
    return new ArrayList<>(adapters.values());
  }

  /**
   * The name to report for a request for {@code model} (null: the base model).
   *
   * @throws ApiError 404 for a name that is neither the base model nor a loaded adapter
   */
  synchronized String resolve(String model) {
    if (model == null || model.equals(baseName)) {
      return baseName;
    }
    Adapter a = adapters.get(model);
    if (a == null) {
      throw ApiError.modelNotFound(model);
    }
    return model;
  }
}
