package dev.ravel.workers.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.model.Tokenizer;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a completion or chat body into a {@link CompletionRequest}, with vLLM's defaults. Every rejected
 * value is an {@link ApiError} (400) whose message starts with the field's name; unknown fields are
 * ignored, as vLLM does; a field set to {@code null} counts as absent.
 */
final class RequestParser {
  /** vLLM's default {@code max_logprobs}. */
  static final int MAX_LOGPROBS = 20;
  /** The most choices (prompts times n) one request may ask for. */
  static final int MAX_CHOICES = 4096;

  private final Tokenizer tokenizer;
  private final int kvTokenBudget;

  RequestParser(Tokenizer tokenizer, int kvTokenBudget) {
    this.tokenizer = tokenizer;
    this.kvTokenBudget = kvTokenBudget;
  }

  /** Parses a body that must be a JSON object. */
  static JsonNode object(byte[] body) {
    JsonNode root;
    try {
      root = Responses.JSON.readTree(body);
    } catch (JsonProcessingException e) {
      throw ApiError.badRequest("Malformed JSON body: " + e.getOriginalMessage());
    } catch (java.io.IOException e) {
      throw ApiError.badRequest("Unreadable request body: " + e.getMessage());
    }
    if (root == null || root.isMissingNode() || !root.isObject()) {
      throw ApiError.badRequest("Request body: must be a JSON object");
    }
    return root;
  }

  CompletionRequest completion(JsonNode body) {
    if (present(body, "echo") && bool(body, "echo", false)) {
      throw ApiError.badRequest("echo", "is not supported by ravel serve (must be false)");
    }
    if (!present(body, "prompt")) {
      throw ApiError.badRequest("prompt", "required");
    }
    List<int[]> prompts = prompts(body.get("prompt"));
    Integer logprobs = null;
    if (present(body, "logprobs")) {
      logprobs = intIn(body, "logprobs", 0, MAX_LOGPROBS, 0);
    }
    return common(body, prompts, logprobs, intIn(body, "max_tokens", 1, Integer.MAX_VALUE, 16), false);
  }

  CompletionRequest chat(JsonNode body) {
    if (!present(body, "messages")) {
      throw ApiError.badRequest("messages", "required");
    }
    List<int[]> prompts = List.of(encode("messages", chatTemplate(body.get("messages"))));
    Integer logprobs = null;
    if (bool(body, "logprobs", false)) {
      logprobs = intIn(body, "top_logprobs", 0, MAX_LOGPROBS, 0);
    } else if (present(body, "top_logprobs") && intIn(body, "top_logprobs", 0, MAX_LOGPROBS, 0) > 0) {
      throw ApiError.badRequest("top_logprobs", "needs logprobs: true");
    }
    String maxField = present(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    return common(body, prompts, logprobs, intIn(body, maxField, 1, Integer.MAX_VALUE, 16), true);
  }

  private CompletionRequest common(JsonNode body, List<int[]> prompts, Integer logprobs, int maxTokens,
      boolean chat) {
    String model = present(body, "model") ? string(body, "model") : null;
    int n = intIn(body, "n", 1, MAX_CHOICES, 1);
    if ((long) n * prompts.size() > MAX_CHOICES) {
      throw ApiError.badRequest("n", "n times the number of prompts must be at most " + MAX_CHOICES + " (got "
          + n + " x " + prompts.size() + ")");
    }
    double temperature = number(body, "temperature", 1.0);
    if (!(temperature >= 0) || Double.isInfinite(temperature)) {
      throw ApiError.badRequest("temperature", "must be a finite number >= 0 (got " + temperature + ")");
    }
    double topP = number(body, "top_p", 1.0);
    if (!(topP > 0 && topP <= 1)) {
      throw ApiError.badRequest("top_p", "must be in (0, 1] (got " + topP + ")");
    }
    Long seed = present(body, "seed") ? longValue(body, "seed") : null;
    SamplingParams sampling = SamplingParams.builder().maxTokens(maxTokens).temperature(temperature).topP(topP)
        .ignoreEos(bool(body, "ignore_eos", false)).build();
    return new CompletionRequest(model, prompts, n, sampling, seed, logprobs,
        bool(body, "return_tokens_as_token_ids", false), bool(body, "stream", false), chat,
        bool(body, "return_weight_versions", false));
  }

  /** A string, a list of token ids, a list of strings or a list of token-id lists. */
  private List<int[]> prompts(JsonNode p) {
    if (p.isTextual()) {
      return List.of(encode("prompt", p.asText()));
    }
    if (!p.isArray()) {
      throw ApiError.badRequest("prompt", "must be a string, a list of token ids, a list of strings or a list of"
          + " token-id lists (got " + kind(p) + ")");
    }
    if (p.isEmpty()) {
      throw ApiError.badRequest("prompt", "must not be empty");
    }
    if (p.get(0).isNumber()) {
      return List.of(tokens("prompt", p));
    }
    List<int[]> out = new ArrayList<>(p.size());
    for (int i = 0; i < p.size(); i++) {
      JsonNode e = p.get(i);
      String field = "prompt[" + i + "]";
      if (e.isTextual()) {
        out.add(encode(field, e.asText()));
      } else if (e.isArray()) {
        out.add(tokens(field, e));
      } else {
        throw ApiError.badRequest(field, "must be a string or a list of token ids (got " + kind(e) + ")");
      }
    }
    return out;
  }

  private int[] tokens(String field, JsonNode list) {
    if (list.isEmpty()) {
      throw ApiError.badRequest(field, "must hold at least one token");
    }
    int[] ids = new int[list.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode t = list.get(i);
      if (!t.isIntegralNumber() || !t.canConvertToInt()) {
        throw ApiError.badRequest(field, "element " + i + " must be a token id (got " + t + ")");
      }
      int id = t.intValue();
      if (id < 0 || id >= tokenizer.vocabSize()) {
        throw ApiError.badRequest(field, "token " + id + " at index " + i + " is outside the vocabulary [0, "
            + tokenizer.vocabSize() + ")");
      }
      ids[i] = id;
    }
    return fits(field, ids);
  }

  private int[] encode(String field, String text) {
    if (text.isEmpty()) {
      throw ApiError.badRequest(field, "must hold at least one token (got an empty string)");
    }
    try {
      return fits(field, tokenizer.encode(text));
    } catch (IllegalArgumentException e) {
      throw ApiError.badRequest(field, e.getMessage());
    }
  }

  private int[] fits(String field, int[] ids) {
    if (ids.length + 1 > kvTokenBudget) {
      throw ApiError.badRequest(field, ids.length + " tokens do not fit the server's KV token budget of "
          + kvTokenBudget + " tokens (with one generated token)");
    }
    return ids;
  }

  /** The simple chat template: the messages' contents joined in order. */
  private static String chatTemplate(JsonNode messages) {
    if (!messages.isArray() || messages.isEmpty()) {
      throw ApiError.badRequest("messages", "must be a non-empty list of {role, content} objects");
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < messages.size(); i++) {
      JsonNode m = messages.get(i);
      String field = "messages[" + i + "]";
      if (!m.isObject()) {
        throw ApiError.badRequest(field, "must be an object with role and content (got " + kind(m) + ")");
      }
      if (!m.path("role").isTextual()) {
        throw ApiError.badRequest(field + ".role", "required string");
      }
      JsonNode content = m.path("content");
      if (content.isTextual()) {
        sb.append(content.asText());
      } else if (content.isArray()) {
        for (int j = 0; j < content.size(); j++) {
          JsonNode part = content.get(j);
          if (!"text".equals(part.path("type").asText()) || !part.path("text").isTextual()) {
            throw ApiError.badRequest(field + ".content[" + j + "]", "only {\"type\":\"text\",\"text\":...} parts"
                + " are supported");
          }
          sb.append(part.get("text").asText());
        }
      } else if (!content.isMissingNode() && !content.isNull()) {
        throw ApiError.badRequest(field + ".content", "must be a string or a list of text parts (got "
            + kind(content) + ")");
      }
    }
    return sb.toString();
  }

  private static boolean present(JsonNode body, String field) {
    JsonNode v = body.get(field);
    return v != null && !v.isNull();
  }

  private static String string(JsonNode body, String field) {
    JsonNode v = body.get(field);
    if (!v.isTextual()) {
      throw ApiError.badRequest(field, "must be a string (got " + kind(v) + ")");
    }
    return v.asText();
  }

  private static boolean bool(JsonNode body, String field, boolean dflt) {
    if (!present(body, field)) {
      return dflt;
    }
    JsonNode v = body.get(field);
    if (!v.isBoolean()) {
      throw ApiError.badRequest(field, "must be true or false (got " + v + ")");
    }
    return v.booleanValue();
  }

  private static double number(JsonNode body, String field, double dflt) {
    if (!present(body, field)) {
      return dflt;
    }
    JsonNode v = body.get(field);
    if (!v.isNumber()) {
      throw ApiError.badRequest(field, "must be a number (got " + v + ")");
    }
    return v.doubleValue();
  }

  private static long longValue(JsonNode body, String field) {
    JsonNode v = body.get(field);
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw ApiError.badRequest(field, "must be an integer (got " + v + ")");
    }
    return v.longValue();
  }

  private static int intIn(JsonNode body, String field, int min, int max, int dflt) {
    if (!present(body, field)) {
      return dflt;
    }
    JsonNode v = body.get(field);
    if (!v.isIntegralNumber() || !v.canConvertToInt()) {
      throw ApiError.badRequest(field, "must be an integer (got " + v + ")");
    }
    int i = v.intValue();
    if (i < min) {
      throw ApiError.badRequest(field, "must be at least " + min + " (got " + i + ")");
    }
    if (i > max) {
      throw ApiError.badRequest(field, "must be at most " + max + " (got " + i + ")");
    }
    return i;
  }

  private static String kind(JsonNode v) {
    return v.isObject() ? "an object" : v.isArray() ? "a list" : v.toString();
  }
}
