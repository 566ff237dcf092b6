package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.model.Tokenizer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The JSON of completion and chat responses and stream chunks, in vLLM's shapes. Tokens and log-probs are
 * the engine's own: every token of the completion (the EOS token included when the request stopped on
 * it) with its log-probability written as the exact double value of the engine's float, so a client that
 * reads it as a double and casts to float gets the engine's number bit for bit.
 */
final class ResponseBodies {
  /** What vLLM writes for a log-probability of minus infinity. */
  private static final double NEG_INF_LOGPROB = -9999.0;

  private final Tokenizer tokenizer;
  private final java.util.function.LongFunction<String> versionLabels;

  ResponseBodies(Tokenizer tokenizer) {
    this(tokenizer, Long::toString);
  }

  /** {@code versionLabels} names an engine weight version in {@code weight_versions} (its update's label). */
  ResponseBodies(Tokenizer tokenizer, java.util.function.LongFunction<String> versionLabels) {
    this.tokenizer = tokenizer;
    this.versionLabels = versionLabels;
  }

  /** vLLM's {@code weight_versions}: {@code [{"version", "start", "end"}]} over the completion's tokens. */
  private void weightVersions(ObjectNode choice, GenerationResult r, CompletionRequest request) {
    if (!request.weightVersions()) {
      return;
    }
    ArrayNode spans = choice.putArray("weight_versions");
    for (dev.ravel.workers.engine.VersionSpan s : r.versionSpans()) {
      spans.addObject().put("version", versionLabels.apply(s.version())).put("start", s.start()).put("end", s.end());
    }
  }

  /** The response envelope; {@code usage} is null for stream chunks. */
  ObjectNode envelope(String id, String object, long created, String model, ArrayNode choices,
      ObjectNode usage) {
    ObjectNode root = Responses.JSON.createObjectNode();
    root.put("id", id);
    root.put("object", object);
    root.put("created", created);
    root.put("model", model);
    root.set("choices", choices);
    if (usage != null) {
      root.set("usage", usage);
    }
    return root;
  }

  /** {@code prompt_tokens} counts each prompt once (as vLLM does with n > 1); completions count every choice. */
  ObjectNode usage(CompletionRequest request, List<GenerationResult> results) {
    long prompt = request.prompts().stream().mapToLong(p -> p.length).sum();
    long completion = results.stream().mapToLong(r -> r.completionTokens().length).sum();
    ObjectNode u = Responses.JSON.createObjectNode();
    u.put("prompt_tokens", prompt);
    u.put("completion_tokens", completion);
    u.put("total_tokens", prompt + completion);
    return u;
  }

  /** A {@code text_completion} choice. */
  ObjectNode completionChoice(int index, GenerationResult r, CompletionRequest request) {
    ObjectNode c = Responses.JSON.createObjectNode();
    c.put("index", index);
    c.put("text", text(r));
    if (request.logprobs() == null) {
      c.putNull("logprobs");
    } else {
      c.set("logprobs", completionLogprobs(r, request.tokenIds()));
    }
    c.put("finish_reason", r.finishReason().wireName());
    c.putNull("stop_reason");
    weightVersions(c, r, request);
    return c;
  }

  /** A {@code chat.completion} choice ({@code message}) or, for a stream chunk, its {@code delta}. */
  ObjectNode chatChoice(int index, GenerationResult r, CompletionRequest request, boolean delta) {
    ObjectNode c = Responses.JSON.createObjectNode();
    c.put("index", index);
    ObjectNode message = c.putObject(delta ? "delta" : "message");
    message.put("role", "assistant");
    message.put("content", text(r));
    if (request.logprobs() == null) {
      c.putNull("logprobs");
    } else {
      c.set("logprobs", chatLogprobs(r, request.tokenIds(), request.logprobs()));
    }
    c.put("finish_reason", r.finishReason().wireName());
    c.putNull("stop_reason");
    weightVersions(c, r, request);
    return c;
  }

  private String text(GenerationResult r) {
    int[] t = r.completionTokens();
    return tokenizer.decode(t, 0, t.length);
  }

  private ObjectNode completionLogprobs(GenerationResult r, boolean tokenIds) {
    int[] tokens = r.completionTokens();
    float[] lp = r.logprobs();
    ObjectNode o = Responses.JSON.createObjectNode();
    ArrayNode names = o.putArray("tokens");
    ArrayNode values = o.putArray("token_logprobs");
    ArrayNode top = o.putArray("top_logprobs");
    ArrayNode offsets = o.putArray("text_offset");
    int offset = 0;
    for (int i = 0; i < tokens.length; i++) {
      String name = tokenName(tokens[i], tokenIds);
      names.add(name);
      values.add(logprob(lp[i]));
      top.addObject().put(name, logprob(lp[i]));
      offsets.add(offset);
      // vLLM counts the offset in what it returns: the token's text, or its "token_id:N" name
      offset += tokenIds ? name.length() : tokenizer.decode(tokens, i, i + 1).length();
    }
    return o;
  }

  private ObjectNode chatLogprobs(GenerationResult r, boolean tokenIds, int topLogprobs) {
    int[] tokens = r.completionTokens();
    float[] lp = r.logprobs();
    ObjectNode o = Responses.JSON.createObjectNode();
    ArrayNode content = o.putArray("content");
    for (int i = 0; i < tokens.length; i++) {
      String name = tokenName(tokens[i], tokenIds);
      ObjectNode e = content.addObject();
      String text = tokenizer.decode(tokens, i, i + 1);
      tokenEntry(e, name, text, lp[i]);
      ArrayNode top = e.putArray("top_logprobs");
      if (topLogprobs > 0) {
        tokenEntry(top.addObject(), name, text, lp[i]);
      }
    }
    return o;
  }

  /** A chat log-prob entry: {@code bytes} are the decoded token's UTF-8 bytes (vLLM's), whatever its name. */
  private static void tokenEntry(ObjectNode e, String name, String text, float lp) {
    e.put("token", name);
    e.put("logprob", logprob(lp));
    ArrayNode bytes = e.putArray("bytes");
    for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
      bytes.add(b & 0xff);
    }
  }

  private String tokenName(int token, boolean tokenIds) {
    return tokenIds ? "token_id:" + token : tokenizer.decode(new int[] {token}, 0, 1);
  }

  private static double logprob(float lp) {
    return Float.isFinite(lp) ? (double) lp : NEG_INF_LOGPROB;
  }
}
