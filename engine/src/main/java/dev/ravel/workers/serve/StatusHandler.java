package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.ravel.workers.engine.EmbeddedEngine;
import java.io.IOException;

/** {@code /health}, {@code /version}, {@code /v1/models} and {@code /metrics}. */
final class StatusHandler {
  private final EmbeddedEngine engine;
  private final ServedModels models;
  private final ServeMetrics metrics;
  private final String version;

  StatusHandler(EmbeddedEngine engine, ServedModels models, ServeMetrics metrics, String version) {
    this.engine = engine;
    this.models = models;
    this.metrics = metrics;
    this.version = version;
  }

  void health(HttpExchange ex) throws IOException {
    Responses.empty(ex, 200);
  }

  void version(HttpExchange ex) throws IOException {
    ObjectNode o = Responses.JSON.createObjectNode();
    o.put("version", version);
    Responses.json(ex, 200, o);
  }

  /** The base model, then one entry per loaded adapter (its root is the weights file it was read from). */
  void models(HttpExchange ex) throws IOException {
    ObjectNode root = Responses.JSON.createObjectNode();
    root.put("object", "list");
    ArrayNode data = root.putArray("data");
    String base = models.baseName();
    entry(data, base, models.createdEpochSeconds(), base, null);
    for (ServedModels.Adapter a : models.adapters()) {
      entry(data, a.name(), a.createdEpochSeconds(), a.path(), base);
    }
    Responses.json(ex, 200, root);
  }

  void metrics(HttpExchange ex) throws IOException {
    Responses.send(ex, 200, metrics.contentType(), metrics.scrape(engine.snapshot()));
  }

  /** vLLM's {@code max_model_len}: the longest sequence the engine can hold, its KV token budget. */
  private void entry(ArrayNode data, String id, long created, String root, String parent) {
    ObjectNode m = data.addObject();
    m.put("id", id);
    m.put("object", "model");
    m.put("created", created);
    m.put("owned_by", "ravel");
    m.put("root", root);
    m.put("parent", parent);
    if (parent == null) { // vLLM gives only the base model's card its length; adapter cards have none
      m.put("max_model_len", engine.config().kvTokenBudget());
    }
  }
}
