package dev.ravel.workers.serve;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
final class ErrorsTest {
  private static TestServer s;

  @BeforeAll
  static void start() {
    s = TestServer.start(b -> b.kvTokenBudget(64));
  }

  @AfterAll
  static void stop() {
    s.close();
  }

  @Test
  void completions_bodyNotDeclaredJson_is400AsVllmSaysIt() {
    assertError(s.post("/v1/completions", "{\"prompt\":\"1+1=\"}", java.util.Map.of("Content-Type", "text/plain")),
        400, "BadRequestError", "Unsupported Media Type: Only 'application/json' is allowed");
    assertThat(s.post("/v1/completions", "{\"prompt\":\"1+1=\",\"max_tokens\":1}",
        java.util.Map.of("Content-Type", "application/json; charset=utf-8")).statusCode()).isEqualTo(200);
  }

  @Test
  void completions_maxTokensZero_is400NamingTheField() {
    assertError(s.post("/v1/completions", "{\"prompt\":\"1+1=\",\"max_tokens\":0}"), 400, "BadRequestError",
        "max_tokens: must be at least 1 (got 0)");
  }

  @Test
  void completions_negativeTemperature_is400NamingTheField() {
    assertError(s.post("/v1/completions", "{\"prompt\":\"1+1=\",\"temperature\":-1}"), 400, "BadRequestError",
        "temperature: must be a finite number >= 0 (got -1.0)");
  }

  @Test
  void completions_topPAboveOne_is400NamingTheField() {
    assertError(s.post("/v1/completions", "{\"prompt\":\"1+1=\",\"top_p\":2}"), 400, "BadRequestError",
        "top_p: must be in (0, 1] (got 2.0)");
  }

  @Test
  void completions_nZeroOrNotAnInteger_is400NamingTheField() {
    assertError(s.post("/v1/completions", "{\"prompt\":\"1+1=\",\"n\":0}"), 400, "BadRequestError",
        "n: must be at least 1 (got 0)");
    assertError(s.post("/v1/completions", "{\"prompt\":\"1+1=\",\"n\":\"two\"}"), 400, "BadRequestError",
        "n: must be an integer (got \"two\")");
  }

  @Test
  void completions_unknownModel_is404AsVllmSaysIt() {
    assertError(s.post("/v1/completions", "{\"model\":\"gpt-4\",\"prompt\":\"1+1=\"}"), 404, "NotFoundError",
        "The model `gpt-4` does not exist.");
  }

  @Test
  void completions_characterOutsideTheVocabulary_is400NamingTheCharacter() {
    assertError(s.post("/v1/completions", "{\"prompt\":\"1+x=\"}"), 400, "BadRequestError",
        "prompt: character 'x' (U+0078) at index 2 is not in the vocabulary \"0123456789+-=\"");
    assertError(s.post("/v1/completions", "{\"prompt\":[\"1+1=\",\"2*2=\"]}"), 400, "BadRequestError",
        "prompt[1]: character '*'");
  }

  @Test
  void completions_tokenIdOutsideTheVocabulary_is400NamingTheToken() {
    assertError(s.post("/v1/completions", "{\"prompt\":[1,99]}"), 400, "BadRequestError",
        "prompt: token 99 at index 1 is outside the vocabulary [0, 14)");
  }

  @Test
  void completions_promptLongerThanTheKvBudget_is400() {
    assertError(s.post("/v1/completions", "{\"prompt\":\"" + "1".repeat(64) + "\"}"), 400, "BadRequestError",
        "prompt: 64 tokens do not fit the server's KV token budget of 64 tokens");
  }

  @Test
  void completions_missingOrEmptyPrompt_is400() {
    assertError(s.post("/v1/completions", "{\"max_tokens\":3}"), 400, "BadRequestError", "prompt: required");
    assertError(s.post("/v1/completions", "{\"prompt\":[]}"), 400, "BadRequestError", "prompt: must not be empty");
    assertError(s.post("/v1/completions", "{\"prompt\":\"\"}"), 400, "BadRequestError",
        "prompt: must hold at least one token");
  }

  @Test
  void completions_echo_is400() {
    assertError(s.post("/v1/completions", "{\"prompt\":\"1\",\"echo\":true}"), 400, "BadRequestError", "echo:");
  }

  @Test
  void completions_malformedJson_is400() {
    assertError(s.post("/v1/completions", "{\"prompt\": [1,2"), 400, "BadRequestError", "Malformed JSON body");
    assertError(s.post("/v1/completions", "[1,2]"), 400, "BadRequestError", "Request body: must be a JSON object");
  }

  @Test
  void completions_unknownFields_areIgnored() {
    assertThat(s.post("/v1/completions", "{\"prompt\":\"1\",\"max_tokens\":2,\"user\":\"u\",\"best_of\":1}")
        .statusCode()).isEqualTo(200);
  }

  @Test
  void chat_badMessages_is400NamingTheMessage() {
    assertError(s.post("/v1/chat/completions", "{\"messages\":[]}"), 400, "BadRequestError", "messages:");
    assertError(s.post("/v1/chat/completions", "{\"messages\":[{\"content\":\"1\"}]}"), 400, "BadRequestError",
        "messages[0].role: required string");
    assertError(s.post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"1\"}],"
        + "\"top_logprobs\":2}"), 400, "BadRequestError", "top_logprobs: needs logprobs: true");
  }

  @Test
  void getOnAPostRoute_is405WithAllow() {
    HttpResponse<String> r = s.get("/v1/completions");
    assertError(r, 405, "MethodNotAllowedError", "Method GET is not allowed on /v1/completions");
    assertThat(r.headers().firstValue("Allow")).hasValue("POST");
  }

  @Test
  void unknownRoute_is404() {
    assertError(s.get("/v1/embeddings"), 404, "NotFoundError", "Not Found: no route /v1/embeddings");
    assertError(s.get("/healthz"), 404, "NotFoundError", "Not Found: no route /healthz");
  }

  static void assertError(HttpResponse<String> r, int status, String type, String messageStart) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
    JsonNode e = TestServer.json(r.body()).get("error");
    assertThat(e.get("message").asText()).startsWith(messageStart);
    assertThat(e.get("type").asText()).isEqualTo(type);
    assertThat(e.get("code").asInt()).isEqualTo(status);
    assertThat(e.has("param")).isTrue();
  }
}
