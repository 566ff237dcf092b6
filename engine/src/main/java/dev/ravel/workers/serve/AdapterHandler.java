package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.model.WeightsFile;
import java.io.IOException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * vLLM's runtime LoRA routes as Ravel's weight refit: {@code POST /v1/load_lora_adapter} reads a
 * {@link WeightsFile}, checks that it fits the engine's vocabulary, makes the engine serve it (requests
 * submitted after the answer run on it) and registers the adapter name; {@code POST
 * /v1/unload_lora_adapter} forgets a name. Loads are serialized.
 */
final class AdapterHandler {
  private static final Logger LOG = LoggerFactory.getLogger(AdapterHandler.class);

  private final EmbeddedEngine engine;
  private final ServedModels models;
  private final Tokenizer tokenizer;
  private final Object loadLock = new Object();

  AdapterHandler(EmbeddedEngine engine, ServedModels models, Tokenizer tokenizer) {
    this.engine = engine;
    this.models = models;
    this.tokenizer = tokenizer;
  }

  void load(HttpExchange ex) throws IOException {
    JsonNode body = RequestParser.object(ex.getRequestBody().readAllBytes());
    String name = requiredString(body, "lora_name");
    String path = requiredString(body, "lora_path");
    JsonNode inplaceNode = body.path("load_inplace");
    if (!inplaceNode.isMissingNode() && !inplaceNode.isNull() && !inplaceNode.isBoolean()) {
      throw ApiError.badRequest("load_inplace", "must be true or false (got " + inplaceNode + ")");
    }
    boolean inplace = inplaceNode.asBoolean(false);
    if (name.equals(models.baseName())) {
      throw ApiError.badRequest("lora_name", "`" + name + "` is the base model's name");
    }
    synchronized (loadLock) {
      if (models.has(name) && !inplace) {
        throw ApiError.badRequest("lora_name", "The lora adapter '" + name + "' has already been loaded. If you"
            + " want to load the adapter in place, set 'load_inplace' to True.");
      }
      ModelWeights w = read(path);
      if (w.spec().vocabSize() != tokenizer.vocabSize()) {
        throw ApiError.badRequest("lora_path", "weights file " + path + " has a vocabulary of "
            + w.spec().vocabSize() + " tokens, the server's tokenizer " + tokenizer.vocabSize());
      }
      engine.updateModel(TinyLm.of(w));
      models.loaded(new ServedModels.Adapter(name, path, w.version(), System.currentTimeMillis() / 1000));
      LOG.info("adapter {} loaded: weight version {} from {}", name, w.version(), path);
    }
    Responses.text(ex, 200, "Success: LoRA adapter '" + name + "' added successfully.");
  }

  void unload(HttpExchange ex) throws IOException {
    JsonNode body = RequestParser.object(ex.getRequestBody().readAllBytes());
    String name = requiredString(body, "lora_name");
    if (!models.unload(name)) {
      throw ApiError.notFound("The lora adapter '" + name + "' cannot be found.");
    }
    Responses.text(ex, 200, "Success: LoRA adapter '" + name + "' removed successfully.");
  }

  private static ModelWeights read(String path) {
    Path file;
    try {
      file = Path.of(path);
    } catch (InvalidPathException e) {
      throw ApiError.badRequest("lora_path", "'" + path + "' is not a valid path: " + e.getMessage());
    }
    try {
      return WeightsFile.read(file);
    } catch (IllegalArgumentException e) {
      throw ApiError.badRequest("lora_path", e.getMessage());
    }
  }

  private static String requiredString(JsonNode body, String field) {
    JsonNode v = body.get(field);
    if (v == null || v.isNull()) {
      throw ApiError.badRequest(field, "required");
    }
    if (!v.isTextual() || v.asText().isBlank()) {
      throw ApiError.badRequest(field, "must be a non-empty string (got " + v + ")");
    }
    return v.asText();
  }
}
