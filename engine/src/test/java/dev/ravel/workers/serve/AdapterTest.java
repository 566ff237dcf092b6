package dev.ravel.workers.serve;

import static dev.ravel.workers.serve.ErrorsTest.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import dev.ravel.workers.model.WeightsFile;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
final class AdapterTest {
  @TempDir
  Path dir;

  @Test
  void loadLoraAdapter_thenCompletion_servesTheNewWeightsAndSpansCarryTheirVersion() {
    try (TestServer s = TestServer.start()) {
      ModelWeights v3 = ModelWeights.init(ModelSpec.tiny(TestServer.TOKENIZER.vocabSize()), 99).withVersion(3);
      Path file = WeightsFile.write(dir.resolve("weights-v3.bin"), v3);

      HttpResponse<String> load = s.post("/v1/load_lora_adapter", "{\"lora_name\":\"ravel-tiny-v3\",\"lora_path\":\""
          + file + "\",\"load_inplace\":false}");

      assertThat(load.statusCode()).as(load.body()).isEqualTo(200);
      assertThat(load.body()).isEqualTo("Success: LoRA adapter 'ravel-tiny-v3' added successfully.");
      assertThat(s.server.weightVersion()).isEqualTo(3);
      JsonNode r = s.ok("/v1/completions", "{\"model\":\"ravel-tiny-v3\",\"prompt\":[1,10,2,12],\"max_tokens\":6,"
          + "\"seed\":4,\"logprobs\":0,\"return_tokens_as_token_ids\":true}");
      assertThat(r.get("model").asText()).isEqualTo("ravel-tiny-v3");
      GenerationResult expected;
      try (EmbeddedEngine e = new EmbeddedEngine(s.config, TinyLm.of(v3), OpenTelemetry.noop())) {
        expected = e.generate(List.of(GenerationRequest.of("x", new int[] {1, 10, 2, 12},
            SamplingParams.builder().maxTokens(6).seed(4).build(), null))).get(0);
      }
      JsonNode tokens = r.at("/choices/0/logprobs/tokens");
      assertThat(tokens).hasSize(expected.completionTokens().length);
      for (int i = 0; i < tokens.size(); i++) {
        assertThat(tokens.get(i).asText()).isEqualTo("token_id:" + expected.completionTokens()[i]);
      }
      s.ok("/v1/completions", "{\"model\":\"ravel-tiny\",\"prompt\":\"1\",\"max_tokens\":2}");
      List<SpanData> spans = s.llmRequests();
      assertThat(spans).hasSize(2);
      assertThat(spans).allSatisfy(sp -> assertThat(sp.getAttributes().get(
          dev.ravel.telemetry.spans.EngineNames.WEIGHT_VERSION)).isEqualTo(3L));

      JsonNode models = TestServer.json(s.get("/v1/models").body()).get("data");
      assertThat(models).hasSize(2);
      assertThat(models.get(1).get("id").asText()).isEqualTo("ravel-tiny-v3");
      assertThat(models.get(1).get("root").asText()).isEqualTo(file.toString());
      assertThat(models.get(1).get("parent").asText()).isEqualTo("ravel-tiny");
      assertThat(models.get(0).has("max_model_len")).isTrue();
      assertThat(models.get(1).has("max_model_len")).as("an adapter card has no length, as vLLM's").isFalse();
    }
  }

  @Test
  void loadLoraAdapter_sameNameTwice_is400UnlessInplace() {
    try (TestServer s = TestServer.start()) {
      Path file = WeightsFile.write(dir.resolve("w.bin"), TestServer.weights().withVersion(1));
      String body = "{\"lora_name\":\"a\",\"lora_path\":\"" + file + "\"}";
      assertThat(s.post("/v1/load_lora_adapter", body).statusCode()).isEqualTo(200);

      assertError(s.post("/v1/load_lora_adapter", body), 400, "BadRequestError",
          "lora_name: The lora adapter 'a' has already been loaded");
      assertThat(s.post("/v1/load_lora_adapter", "{\"lora_name\":\"a\",\"lora_path\":\"" + file
          + "\",\"load_inplace\":true}").statusCode()).isEqualTo(200);
    }
  }

  @Test
  void loadLoraAdapter_unreadableOrForeignFile_is400NamingThePath() throws IOException {
    try (TestServer s = TestServer.start()) {
      Path missing = dir.resolve("missing.bin");
      assertError(s.post("/v1/load_lora_adapter", "{\"lora_name\":\"a\",\"lora_path\":\"" + missing + "\"}"), 400,
          "BadRequestError", "lora_path: weights file " + missing);
      Path junk = Files.writeString(dir.resolve("junk.bin"), "hello");
      assertError(s.post("/v1/load_lora_adapter", "{\"lora_name\":\"a\",\"lora_path\":\"" + junk + "\"}"), 400,
          "BadRequestError", "lora_path: weights file " + junk + ": not a Ravel weights file");
      Path wide = WeightsFile.write(dir.resolve("wide.bin"), ModelWeights.init(ModelSpec.tiny(20), 1));
      assertError(s.post("/v1/load_lora_adapter", "{\"lora_name\":\"a\",\"lora_path\":\"" + wide + "\"}"), 400,
          "BadRequestError", "lora_path: weights file " + wide + " has a vocabulary of 20 tokens");
      assertError(s.post("/v1/load_lora_adapter", "{\"lora_path\":\"" + wide + "\"}"), 400, "BadRequestError",
          "lora_name: required");
      assertThat(s.server.weightVersion()).isZero();
    }
  }

  @Test
  void completion_forThePreviousAdapter_isServedWithTheCurrentWeights() {
    try (TestServer s = TestServer.start()) {
      Path v1 = WeightsFile.write(dir.resolve("v1.bin"), TestServer.weights().withVersion(1));
      Path v2 = WeightsFile.write(dir.resolve("v2.bin"), TestServer.weights().withVersion(2));
      s.post("/v1/load_lora_adapter", "{\"lora_name\":\"p1\",\"lora_path\":\"" + v1 + "\"}");
      s.post("/v1/load_lora_adapter", "{\"lora_name\":\"p2\",\"lora_path\":\"" + v2 + "\"}");

      assertThat(s.post("/v1/completions", "{\"model\":\"p1\",\"prompt\":\"1\",\"max_tokens\":1}").statusCode())
          .isEqualTo(200);
      assertThat(s.server.weightVersion()).isEqualTo(2);
      assertThat(s.post("/v1/completions", "{\"model\":\"p2\",\"prompt\":\"1\",\"max_tokens\":1}").statusCode())
          .isEqualTo(200);
    }
  }

  @Test
  void unloadLoraAdapter_forgetsTheNameAndAnUnknownNameIs404() {
    try (TestServer s = TestServer.start()) {
      Path v1 = WeightsFile.write(dir.resolve("v1.bin"), TestServer.weights().withVersion(1));
      s.post("/v1/load_lora_adapter", "{\"lora_name\":\"p1\",\"lora_path\":\"" + v1 + "\"}");

      HttpResponse<String> r = s.post("/v1/unload_lora_adapter", "{\"lora_name\":\"p1\"}");

      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).isEqualTo("Success: LoRA adapter 'p1' removed successfully.");
      assertThat(TestServer.json(s.get("/v1/models").body()).get("data")).hasSize(1);
      assertError(s.post("/v1/completions", "{\"model\":\"p1\",\"prompt\":\"1\"}"), 404, "NotFoundError",
          "The model `p1` does not exist.");
      assertError(s.post("/v1/unload_lora_adapter", "{\"lora_name\":\"p1\"}"), 404, "NotFoundError",
          "The lora adapter 'p1' cannot be found.");
    }
  }
}
