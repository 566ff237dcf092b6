package dev.ravel.workers.generation.openai;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.SamplingParams;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The JSON of vLLM's {@code POST /v1/completions} as Ravel uses it (docs/openai-protocol.md): the prompt as
 * token ids, {@code n} samples seeded {@code seed + i} (a GRPO group, see {@code GroupRequests}), and the
 * sampled tokens' log-probs with {@code return_tokens_as_token_ids}, so that each completion's token ids and
 * behaviour log-probs reach the trainer as from the embedded engine.
 */
final class CompletionsProtocol {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** vLLM writes each token as {@code token_id:<id>} under {@code return_tokens_as_token_ids}. */
  private static final String TOKEN_ID_PREFIX = "token_id:";
  /** Characters of a server's body kept in an error message. */
  private static final int MAX_MESSAGE = 500;

  private CompletionsProtocol() {}

  /**
   * A parsed completion: what became of one request.
   *
   * @param versions the server's {@code weight_versions} (which weight-version label sampled which tokens), empty
   *     when it sent none
   */
  record Completion(String model, int[] tokens, float[] logprobs, FinishReason finishReason,
      List<LabelledSpan> versions) {
    Completion(String model, int[] tokens, float[] logprobs, FinishReason finishReason) {
      this(model, tokens, logprobs, finishReason, List.of());
    }
  }

  /** One of vLLM's {@code weight_versions}: output tokens {@code [start, end)} were sampled by weights {@code label}. */
  record LabelledSpan(String label, int start, int end) {}

  /**
   * The body of {@code POST /v1/completions} for {@code n} samples of {@code request}'s prompt (sample i
   * seeded with its seed + i), addressed to {@code model}.
   */
  static byte[] requestBody(GenerationRequest request, int n, String model) {
    SamplingParams p = request.params();
    ObjectNode body = JSON.createObjectNode();
    body.put("model", model);
    ArrayNode prompt = body.putArray("prompt");
    for (int t : request.promptTokens()) {
      prompt.add(t);
    }
    body.put("n", n);
    body.put("max_tokens", p.maxTokens());
    body.put("temperature", p.temperature());
    body.put("top_p", p.topP());
    body.put("seed", p.seed());
    if (p.ignoreEos()) {
      body.put("ignore_eos", true); // vLLM's sampling extension; ravel serve takes it too
    }
    // 0 top alternatives: only the sampled token's log-prob (vLLM returns it for every position)
    body.put("logprobs", 0);
    body.put("return_tokens_as_token_ids", true);
    body.put("stream", false);
    // vLLM 0.33: each choice says which weight version sampled which tokens (older servers ignore the field)
    body.put("return_weight_versions", true);
    try {
      return JSON.writeValueAsBytes(body);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write a completions request", e);
    }
  }

  /**
   * Reads a completions response of {@code n} choices; the result is in choice order ({@code index}).
   *
   * @throws MalformedResponseException saying what is missing or wrong
   */
  static List<Completion> parse(byte[] body, int n) {
    JsonNode root;
    try {
      root = JSON.readTree(body);
    } catch (java.io.IOException e) {
      throw new MalformedResponseException("not JSON: " + snippet(body));
    }
    if (root == null || !root.isObject()) {
      throw new MalformedResponseException("not a JSON object: " + snippet(body));
    }
    JsonNode choices = root.path("choices");
    if (!choices.isArray() || choices.size() != n) {
      throw new MalformedResponseException("expected " + n + " choices (n = " + n + "), got "
          + (choices.isArray() ? choices.size() : "no 'choices' array"));
    }
    Completion[] out = new Completion[n];
    for (JsonNode choice : choices) {
      int index = n == 1 && !choice.has("index") ? 0 : choice.path("index").asInt(-1);
      if (index < 0 || index >= n || out[index] != null) {
        throw new MalformedResponseException("choice index " + choice.path("index") + " is missing, out of range"
            + " or repeated (n = " + n + ")");
      }
      out[index] = choice(root, choice);
    }
    return List.of(out);
  }

  private static Completion choice(JsonNode root, JsonNode choice) {
    JsonNode lp = choice.path("logprobs");
    JsonNode tokens = lp.path("tokens");
    JsonNode tokenLogprobs = lp.path("token_logprobs");
    if (!tokens.isArray() || !tokenLogprobs.isArray()) {
      throw new MalformedResponseException("choice has no logprobs.tokens/token_logprobs (does the server support"
          + " logprobs?)");
    }
    if (tokens.size() != tokenLogprobs.size()) {
      throw new MalformedResponseException("logprobs.tokens has " + tokens.size() + " entries but token_logprobs "
          + tokenLogprobs.size());
    }
    int[] ids = new int[tokens.size()];
    float[] logprobs = new float[tokens.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = tokenId(tokens.get(i), i);
      JsonNode l = tokenLogprobs.get(i);
      if (!l.isNumber()) {
        throw new MalformedResponseException("logprobs.token_logprobs[" + i + "] is not a number: " + l);
      }
      logprobs[i] = (float) l.asDouble();
    }
    String reason = choice.path("finish_reason").asText("");
    FinishReason finish = switch (reason) {
      case "stop" -> FinishReason.STOP;
      case "length" -> FinishReason.LENGTH;
      case "abort" -> FinishReason.ABORT;
      default -> throw new MalformedResponseException("unknown finish_reason '" + reason + "'");
    };
    return new Completion(root.path("model").asText(""), ids, logprobs, finish, versions(choice, ids.length));
  }

  private static List<LabelledSpan> versions(JsonNode choice, int tokens) {
    JsonNode spans = choice.path("weight_versions");
    if (spans.isMissingNode() || spans.isNull()) {
      return List.of();
    }
    if (!spans.isArray()) {
      throw new MalformedResponseException("weight_versions is not a list: " + spans);
    }
    List<LabelledSpan> out = new java.util.ArrayList<>(spans.size());
    int next = 0;
    for (JsonNode s : spans) {
      int start = s.path("start").asInt(-1);
      int end = s.path("end").asInt(-1);
      if (!s.path("version").isTextual() || start != next || end <= start || end > tokens) {
        throw new MalformedResponseException("weight_versions entry " + s + " does not continue the spans over the "
            + tokens + " tokens (expected start " + next + ")");
      }
      out.add(new LabelledSpan(s.path("version").asText(), start, end));
      next = end;
    }
    if (next != tokens && !out.isEmpty()) {
      throw new MalformedResponseException("weight_versions cover " + next + " of " + tokens + " tokens");
    }
    return out;
  }

  private static int tokenId(JsonNode token, int index) {
    String t = token.asText("");
    if (!t.startsWith(TOKEN_ID_PREFIX)) {
      throw new MalformedResponseException("logprobs.tokens[" + index + "] is '" + t + "', not " + TOKEN_ID_PREFIX
          + "<id> (the server ignored return_tokens_as_token_ids)");
    }
    try {
      return Integer.parseInt(t.substring(TOKEN_ID_PREFIX.length()));
    } catch (NumberFormatException e) {
      throw new MalformedResponseException("logprobs.tokens[" + index + "] is '" + t + "', not " + TOKEN_ID_PREFIX
          + "<id>");
    }
  }

  /**
   * The server's own message in an error body: vLLM's {@code {"error": {"message": ...}}}, the older
   * top-level {@code {"message": ...}}, or else the body itself (shortened).
   */
  static String errorMessage(byte[] body) {
    try {
      JsonNode root = JSON.readTree(body);
      if (root != null) {
        JsonNode m = root.path("error").path("message");
        if (m.isTextual()) {
          return m.asText();
        }
        if (root.path("message").isTextual()) {
          return root.path("message").asText();
        }
        if (root.path("detail").isTextual()) {
          return root.path("detail").asText();
        }
      }
    } catch (java.io.IOException e) {
      // not JSON: the body as it is
    }
    return snippet(body);
  }

  static String snippet(byte[] body) {
    String s = new String(body, StandardCharsets.UTF_8).strip();
    return s.length() <= MAX_MESSAGE ? s : s.substring(0, MAX_MESSAGE) + "...";
  }

  /** A response that does not follow the protocol. */
  static final class MalformedResponseException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MalformedResponseException(String message) {
      super(message);
    }
  }
}
