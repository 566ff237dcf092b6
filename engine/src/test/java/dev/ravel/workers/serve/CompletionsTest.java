package dev.ravel.workers.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.model.TinyLm;
import io.opentelemetry.api.OpenTelemetry;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
final class CompletionsTest {
  private static TestServer s;

  @BeforeAll
  static void start() {
    s = TestServer.start();
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  @Test
  void completions_tokenIdPromptN4_returnsExactlyTheEmbeddedEnginesTokensAndLogprobs() {
    int[] prompt = TestServer.TOKENIZER.encode("12+34=");
    JsonNode r = s.ok("/v1/completions", "{\"model\":\"ravel-tiny\",\"prompt\":[1,2,10,3,4,12],\"n\":4,"
        + "\"max_tokens\":12,\"temperature\":0.8,\"top_p\":0.95,\"seed\":1234,\"logprobs\":0,"
        + "\"return_tokens_as_token_ids\":true}");

    List<GenerationResult> expected = embedded(prompt, 4, SamplingParams.builder().maxTokens(12).temperature(0.8)
        .topP(0.95).build(), 1234);
    assertThat(r.get("object").asText()).isEqualTo("text_completion");
    assertThat(r.get("choices")).hasSize(4);
    long completionTokens = 0;
    for (int i = 0; i < 4; i++) {
      JsonNode c = r.get("choices").get(i);
      GenerationResult e = expected.get(i);
      assertThat(c.get("index").asInt()).isEqualTo(i);
      JsonNode lp = c.get("logprobs");
      int[] tokens = new int[lp.get("tokens").size()];
      float[] logprobs = new float[tokens.length];
      for (int k = 0; k < tokens.length; k++) {
        assertThat(lp.get("tokens").get(k).asText()).startsWith("token_id:");
        // vLLM counts text offsets in what it returns: the running length of the "token_id:N" names
        int offset = 0;
        for (int j = 0; j < k; j++) {
          offset += lp.get("tokens").get(j).asText().length();
        }
        assertThat(lp.get("text_offset").get(k).asInt()).isEqualTo(offset);
        tokens[k] = Integer.parseInt(lp.get("tokens").get(k).asText().substring("token_id:".length()));
        double d = lp.get("token_logprobs").get(k).doubleValue();
        assertThat(d).isEqualTo((double) e.logprobs()[k]);
        logprobs[k] = (float) d;
      }
      assertThat(tokens).as("choice %d tokens", i).isEqualTo(e.completionTokens());
      assertThat(logprobs).as("choice %d logprobs", i).isEqualTo(e.logprobs());
      assertThat(c.get("finish_reason").asText()).isEqualTo(e.finishReason().wireName());
      assertThat(c.get("text").asText()).isEqualTo(TestServer.TOKENIZER.decode(tokens, 0, tokens.length));
      completionTokens += tokens.length;
    }
    assertThat(r.at("/usage/prompt_tokens").asLong()).isEqualTo(6);
    assertThat(r.at("/usage/completion_tokens").asLong()).isEqualTo(completionTokens);
    assertThat(r.at("/usage/total_tokens").asLong()).isEqualTo(6 + completionTokens);
  }

  @Test
  void completions_ignoreEos_everyChoiceRunsToMaxTokens() {
    JsonNode r = s.ok("/v1/completions", "{\"model\":\"ravel-tiny\",\"prompt\":[1,2,10,3,4,12],\"n\":8,"
        + "\"max_tokens\":12,\"seed\":7,\"ignore_eos\":true,\"return_tokens_as_token_ids\":true,\"logprobs\":0}");

    assertThat(r.get("choices")).hasSize(8).allSatisfy(c -> {
      assertThat(c.get("logprobs").get("tokens")).hasSize(12);
      assertThat(c.get("finish_reason").asText()).isEqualTo("length");
    });
    assertThat(r.at("/usage/completion_tokens").asLong()).isEqualTo(8 * 12);
  }

  @Test
  void completions_textPrompt_answersTheDecodedCompletionOfTheEncodedPrompt() {
    JsonNode r = s.ok("/v1/completions", "{\"prompt\":\"7+8=\",\"max_tokens\":5,\"seed\":3,\"logprobs\":1}");

    List<GenerationResult> expected = embedded(TestServer.TOKENIZER.encode("7+8="), 1,
        SamplingParams.builder().maxTokens(5).build(), 3);
    JsonNode c = r.get("choices").get(0);
    int[] t = expected.get(0).completionTokens();
    assertThat(c.get("text").asText()).isEqualTo(TestServer.TOKENIZER.decode(t, 0, t.length));
    assertThat(c.at("/logprobs/tokens")).hasSize(t.length);
    assertThat(c.at("/logprobs/text_offset").get(0).asInt()).isZero();
    for (int i = 1; i < t.length; i++) { // each offset is where the token's text starts in the completion's text
      assertThat(c.at("/logprobs/text_offset").get(i).asInt()).isEqualTo(TestServer.TOKENIZER.decode(t, 0, i).length());
    }
    assertThat(c.at("/logprobs/top_logprobs")).hasSize(t.length);
    assertThat(c.get("stop_reason").isNull()).isTrue();
    assertThat(r.get("model").asText()).isEqualTo("ravel-tiny");
    assertThat(r.get("id").asText()).startsWith("cmpl-");
    assertThat(r.at("/usage/prompt_tokens").asInt()).isEqualTo(4);
  }

  @Test
  void completions_severalPromptsWithN2_answersTwoChoicesPerPromptInOrder() {
    JsonNode r = s.ok("/v1/completions", "{\"prompt\":[\"1+1=\",\"2+2=\",\"3+3=\"],\"n\":2,\"max_tokens\":4,"
        + "\"seed\":10}");

    assertThat(r.get("choices")).hasSize(6);
    SamplingParams p = SamplingParams.builder().maxTokens(4).build();
    String[] prompts = {"1+1=", "2+2=", "3+3="};
    for (int i = 0; i < 6; i++) {
      GenerationResult e = embeddedOne(TestServer.TOKENIZER.encode(prompts[i / 2]), p.withSeed(10 + i));
      int[] t = e.completionTokens();
      assertThat(r.get("choices").get(i).get("index").asInt()).isEqualTo(i);
      assertThat(r.get("choices").get(i).get("text").asText()).isEqualTo(TestServer.TOKENIZER.decode(t, 0, t.length));
      assertThat(r.get("choices").get(i).get("logprobs").isNull()).isTrue();
    }
    assertThat(r.at("/usage/prompt_tokens").asInt()).isEqualTo(12);
  }

  @Test
  void completions_listOfTokenIdLists_servesEachPrompt() {
    JsonNode r = s.ok("/v1/completions", "{\"prompt\":[[1,10,1,12],[2]],\"max_tokens\":3,\"seed\":5}");

    assertThat(r.get("choices")).hasSize(2);
    assertThat(r.at("/usage/prompt_tokens").asInt()).isEqualTo(5);
  }

  @Test
  void chat_messages_answersAnAssistantMessageGeneratedFromTheJoinedContents() {
    JsonNode r = s.ok("/v1/chat/completions", "{\"model\":\"ravel-tiny\",\"messages\":[{\"role\":\"system\","
        + "\"content\":\"1+\"},{\"role\":\"user\",\"content\":\"2=\"}],\"max_tokens\":6,\"seed\":9,\"n\":2,"
        + "\"logprobs\":true,\"top_logprobs\":1}");

    assertThat(r.get("object").asText()).isEqualTo("chat.completion");
    assertThat(r.get("id").asText()).startsWith("chatcmpl-");
    for (int i = 0; i < 2; i++) {
      GenerationResult e = embeddedOne(TestServer.TOKENIZER.encode("1+2="),
          SamplingParams.builder().maxTokens(6).seed(9 + i).build());
      JsonNode c = r.get("choices").get(i);
      int[] t = e.completionTokens();
      assertThat(c.at("/message/role").asText()).isEqualTo("assistant");
      assertThat(c.at("/message/content").asText()).isEqualTo(TestServer.TOKENIZER.decode(t, 0, t.length));
      assertThat(c.at("/logprobs/content")).hasSize(t.length);
      assertThat(c.at("/logprobs/content/0/logprob").doubleValue()).isEqualTo((double) e.logprobs()[0]);
      assertThat(c.at("/logprobs/content/0/top_logprobs")).hasSize(1);
      // bytes: the decoded token's UTF-8, as vLLM's
      String first = TestServer.TOKENIZER.decode(t, 0, 1);
      assertThat(c.at("/logprobs/content/0/bytes")).hasSize(first.length());
      assertThat(c.at("/logprobs/content/0/bytes/0").asInt()).isEqualTo(first.getBytes(StandardCharsets.UTF_8)[0] & 0xff);
    }
    assertThat(r.at("/usage/prompt_tokens").asInt()).isEqualTo(4);
  }

  @Test
  void completions_stream_sendsOneEventPerChoiceThenDone() {
    HttpResponse<String> r = s.post("/v1/completions", "{\"prompt\":[1,10,2,12],\"n\":3,\"max_tokens\":8,"
        + "\"seed\":77,\"stream\":true,\"logprobs\":0,\"return_tokens_as_token_ids\":true}");

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith(
        "text/event-stream"));
    List<String> events = events(r.body());
    assertThat(events).hasSize(4);
    assertThat(events.get(3)).isEqualTo("[DONE]");
    List<GenerationResult> expected = embedded(new int[] {1, 10, 2, 12}, 3,
        SamplingParams.builder().maxTokens(8).build(), 77);
    boolean[] seen = new boolean[3];
    for (String e : events.subList(0, 3)) {
      JsonNode chunk = TestServer.json(e);
      assertThat(chunk.get("object").asText()).isEqualTo("text_completion");
      assertThat(chunk.has("usage")).isFalse();
      JsonNode c = chunk.get("choices").get(0);
      int index = c.get("index").asInt();
      seen[index] = true;
      int[] t = expected.get(index).completionTokens();
      assertThat(c.get("text").asText()).isEqualTo(TestServer.TOKENIZER.decode(t, 0, t.length));
      assertThat(c.at("/logprobs/tokens")).hasSize(t.length);
    }
    assertThat(seen).containsOnly(true);
  }

  @Test
  void chat_stream_sendsChunksWithDeltasThenDone() {
    HttpResponse<String> r = s.post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":"
        + "\"5+5=\"}],\"n\":2,\"max_tokens\":4,\"stream\":true}");

    List<String> events = events(r.body());
    assertThat(events).hasSize(3).last().isEqualTo("[DONE]");
    for (String e : events.subList(0, 2)) {
      JsonNode chunk = TestServer.json(e);
      assertThat(chunk.get("object").asText()).isEqualTo("chat.completion.chunk");
      assertThat(chunk.at("/choices/0/delta/role").asText()).isEqualTo("assistant");
      assertThat(chunk.at("/choices/0/delta/content").isTextual()).isTrue();
    }
  }

  @Test
  void health_version_models_answerAsVllmDoes() {
    assertThat(s.get("/health").statusCode()).isEqualTo(200);
    assertThat(s.get("/health").body()).isEmpty();
    JsonNode v = TestServer.json(s.get("/version").body());
    assertThat(v.get("version").asText()).isNotBlank().doesNotStartWith("${");
    JsonNode m = TestServer.json(s.get("/v1/models").body());
    assertThat(m.get("object").asText()).isEqualTo("list");
    JsonNode base = m.get("data").get(0);
    assertThat(base.get("id").asText()).isEqualTo("ravel-tiny");
    assertThat(base.get("object").asText()).isEqualTo("model");
    assertThat(base.get("owned_by").asText()).isEqualTo("ravel");
    assertThat(base.get("root").asText()).isEqualTo("ravel-tiny");
    assertThat(base.get("parent").isNull()).isTrue();
    assertThat(base.get("max_model_len").asInt()).isEqualTo(s.config.kvTokenBudget());
  }

  static List<String> events(String body) {
    List<String> out = new ArrayList<>();
    for (String block : body.split("\n\n")) {
      if (!block.isBlank()) {
        assertThat(block).startsWith("data: ");
        out.add(block.substring("data: ".length()));
      }
    }
    return out;
  }

  private static List<GenerationResult> embedded(int[] prompt, int n, SamplingParams p, long seed) {
    try (EmbeddedEngine engine = new EmbeddedEngine(s.config, TinyLm.of(s.weights), OpenTelemetry.noop())) {
      List<GenerationRequest> rs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        rs.add(GenerationRequest.of("expected-" + i, prompt, p.withSeed(seed + i), null));
      }
      return engine.generate(rs);
    }
  }

  private static GenerationResult embeddedOne(int[] prompt, SamplingParams p) {
    return embedded(prompt, 1, p, p.seed()).get(0);
  }
}
