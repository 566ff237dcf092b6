package dev.ravel.workers.serve;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The names this server answers to: the base model (always served with the engine's current weights) and
 * the loaded adapters (vLLM's runtime LoRA names), each bound to the weight version it loaded. The server
 * holds one weight version, so an adapter whose version is no longer the engine's cannot be served.
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
   * @throws ApiError 404 for a name that is neither the base model nor a loaded adapter, 400 for an adapter
   *     whose weight version the engine no longer serves
   */
  synchronized String resolve(String model) {
    if (model == null || model.equals(baseName)) {
      return baseName;
    }
    Adapter a = adapters.get(model);
    if (a == null) {
      throw ApiError.modelNotFound(model);
    }
    if (a.version() != currentVersion) {
      throw ApiError.badRequest("model", "adapter `" + model + "` holds weight version " + a.version()
          + " but the server now serves version " + currentVersion + " (it holds one version at a time)");
    }
    return model;
  }
}
