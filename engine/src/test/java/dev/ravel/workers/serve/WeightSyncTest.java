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
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** vLLM's native weight-update routes on {@code ravel serve}: order, bodies, pause modes, weight versions. */
@Timeout(120)
final class WeightSyncTest {
  private static final String PROMPT = "{\"prompt\":[1,10,2,12],\"max_tokens\":6,\"seed\":4,\"logprobs\":0,"
      + "\"return_tokens_as_token_ids\":true,\"return_weight_versions\":true";

  @TempDir
  Path dir;

  private ModelWeights weights(long version) {
    return ModelWeights.init(ModelSpec.tiny(TestServer.TOKENIZER.vocabSize()), 100 + version).withVersion(version);
  }

  private String updateInfo(ModelWeights w) throws IOException {
    Path file = WeightsFile.write(dir.resolve("weights-v" + w.version() + ".bin"), w);
    byte[] bytes = Files.readAllBytes(file);
    return "{\"update_info\":{\"path\":\"" + file + "\",\"sha256\":\"" + WeightSync.sha256(bytes) + "\",\"bytes\":"
        + bytes.length + "}}";
  }

  private static GenerationResult expected(TestServer s, ModelWeights w) {
    try (EmbeddedEngine e = new EmbeddedEngine(s.config, TinyLm.of(w), OpenTelemetry.noop())) {
      return e.generate(List.of(GenerationRequest.of("x", new int[] {1, 10, 2, 12},
          SamplingParams.builder().maxTokens(6).seed(4).build(), null))).get(0);
    }
  }

  private static void assertTokens(JsonNode response, GenerationResult expected) {
    JsonNode tokens = response.at("/choices/0/logprobs/tokens");
    assertThat(tokens).hasSize(expected.completionTokens().length);
    for (int i = 0; i < tokens.size(); i++) {
      assertThat(tokens.get(i).asText()).isEqualTo("token_id:" + expected.completionTokens()[i]);
    }
  }

  @Test
  void nativeUpdate_inVllmsOrder_servesTheNewWeightsUnderTheirLabel() throws IOException {
    try (TestServer s = TestServer.start()) {
      ModelWeights v5 = weights(5);
      assertThat(s.ok("/init_weight_transfer_engine", "{\"init_info\":{\"transport\":\"ravel-file\"}}")
          .get("message").asText()).isEqualTo("Weight transfer initialized");
      assertThat(s.ok("/pause?mode=wait&clear_cache=false", "").get("status").asText()).isEqualTo("paused");
      assertThat(s.getJson("/is_paused").get("is_paused").asBoolean()).isTrue();
      assertThat(s.ok("/start_weight_update", "").get("message").asText()).isEqualTo("Weight update started");
      assertThat(s.ok("/update_weights", updateInfo(v5)).get("message").asText()).isEqualTo("Weights updated");
      assertThat(s.ok("/finish_weight_update", "{\"weight_version\":\"5\"}").get("message").asText())
          .isEqualTo("Weight update finished");
      assertThat(s.ok("/resume", "").get("status").asText()).isEqualTo("resumed");

      assertThat(s.getJson("/is_paused").get("is_paused").asBoolean()).isFalse();
      assertThat(s.getJson("/weight_info").get("weight_version").asText()).isEqualTo("5");
      assertThat(s.getJson("/get_world_size").get("world_size").asInt()).isEqualTo(1);
      JsonNode r = s.ok("/v1/completions", PROMPT + "}");
      assertTokens(r, expected(s, v5));
      JsonNode spans = r.at("/choices/0/weight_versions");
      assertThat(spans).hasSize(1);
      assertThat(spans.get(0).get("version").asText()).isEqualTo("5");
      assertThat(spans.get(0).get("start").asInt()).isZero();
      assertThat(spans.get(0).get("end").asInt()).isEqualTo(r.at("/choices/0/logprobs/tokens").size());
      assertThat(s.server.weightVersion()).isEqualTo(5);
    }
  }

  @Test
  void weightVersions_notAsked_areNotInTheChoice() {
    try (TestServer s = TestServer.start()) {
      JsonNode r = s.ok("/v1/completions", "{\"prompt\":[1,10,2,12],\"max_tokens\":3}");
      assertThat(r.at("/choices/0").has("weight_versions")).isFalse();
    }
  }

  @Test
  void startWeightUpdate_twice_isRefusedAsVllmsWorkerRefusesIt() {
    try (TestServer s = TestServer.start()) {
      s.ok("/start_weight_update", "");
      assertError(s.post("/start_weight_update", ""), 500, "InternalServerError",
          WeightSync.RPC_FAILED + "start_weight_update called while a weight update is already active. Call"
              + " finish_weight_update first.");
    }
  }

  @Test
  void updateWeights_withoutStart_isRefused() throws IOException {
    try (TestServer s = TestServer.start()) {
      assertError(s.post("/update_weights", updateInfo(weights(2))), 500, "InternalServerError",
          WeightSync.RPC_FAILED + "start_weight_update must be called before update_weights.");
      assertError(s.post("/finish_weight_update", "{\"weight_version\":\"2\"}"), 500, "InternalServerError",
          WeightSync.RPC_FAILED + "finish_weight_update called without a matching start_weight_update.");
      assertThat(s.server.weightVersion()).isEqualTo(TestServer.weights().version());
    }
  }

  @Test
  void updateWeights_digestOfAnotherFile_isRefusedAndEndsTheSession() throws IOException {
    try (TestServer s = TestServer.start()) {
      s.ok("/start_weight_update", "");
      String info = updateInfo(weights(2)).replaceAll("\"sha256\":\"[0-9a-f]+\"", "\"sha256\":\"" + "0".repeat(64)
          + "\"");
      HttpResponse<String> r = s.post("/update_weights", info);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
      assertThat(r.body()).contains("update_info.sha256").contains("not the one that was sent");
      // as vLLM's worker: the failed update ended the session
      assertError(s.post("/finish_weight_update", "{}"), 500, "InternalServerError",
          WeightSync.RPC_FAILED + "finish_weight_update called without a matching start_weight_update.");
    }
  }

  @Test
  void updateWeights_unknownField_namesIt() {
    try (TestServer s = TestServer.start()) {
      s.ok("/start_weight_update", "");
      HttpResponse<String> r = s.post("/update_weights", "{\"update_info\":{\"path\":\"/x\",\"packed\":true}}");
      assertThat(r.statusCode()).isEqualTo(400);
      assertThat(r.body()).contains("unexpected keyword argument 'packed'");
    }
  }

  @Test
  void initWeightTransfer_otherTransport_isRefusedNamingIt() {
    try (TestServer s = TestServer.start()) {
      HttpResponse<String> r = s.post("/init_weight_transfer_engine", "{\"init_info\":{\"transport\":\"nccl\"}}");
      assertThat(r.statusCode()).isEqualTo(400);
      assertThat(r.body()).contains("transport 'nccl' is not served here");
      HttpResponse<String> missing = s.post("/init_weight_transfer_engine", "{}");
      assertThat(missing.statusCode()).isEqualTo(400);
      assertThat(missing.body()).contains("body.init_info");
    }
  }

  @Test
  void pause_unknownMode_isABadRequestNamingMode() {
    try (TestServer s = TestServer.start()) {
      HttpResponse<String> r = s.post("/pause?mode=later", "");
      assertThat(r.statusCode()).isEqualTo(400);
      assertThat(r.body()).contains("mode").contains("later");
    }
  }

  @Test
  void completion_whilePausedToWait_is503UntilResume() {
    try (TestServer s = TestServer.start()) {
      s.ok("/pause?mode=wait", "");
      HttpResponse<String> refused = s.post("/v1/completions", PROMPT + "}");
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(503);
      assertThat(refused.body()).contains(WeightSync.PAUSED);
      s.ok("/resume", "");
      assertThat(s.post("/v1/completions", PROMPT + "}").statusCode()).isEqualTo(200);
    }
  }

  /** The initial model, held inside its 10th forward pass until {@code release} (the request then has tokens). */
  private static final class Held implements dev.ravel.workers.model.LanguageModel {
    final dev.ravel.workers.model.LanguageModel inner;
    final java.util.concurrent.CountDownLatch inForward = new java.util.concurrent.CountDownLatch(1);
    final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    final java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();

    Held(dev.ravel.workers.model.LanguageModel inner) {
      this.inner = inner;
    }

    @Override
    public int vocabSize() {
      return inner.vocabSize();
    }

    @Override
    public long version() {
      return inner.version();
    }

    @Override
    public dev.ravel.workers.model.KvCache newCache() {
      return inner.newCache();
    }

    @Override
    public void forward(dev.ravel.workers.model.KvCache cache, int[] tokens, int from, int to, float[] logits) {
      if (calls.incrementAndGet() == 10) {
        inForward.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      inner.forward(cache, tokens, from, to, logits);
    }
  }

  @Test
  void pauseKeep_updateMidRequest_tokensCarryBothVersions() throws Exception {
    java.util.concurrent.atomic.AtomicReference<Held> held = new java.util.concurrent.atomic.AtomicReference<>();
    Path exchanges = dir.resolve("exchanges.jsonl");
    try (TestServer s = TestServer.withInitialModel(m -> {
      held.set(new Held(m));
      return held.get();
    }, exchanges)) {
      ModelWeights v9 = weights(9);
      String body = "{\"prompt\":[1,10,2,12],\"max_tokens\":30,\"seed\":4,\"logprobs\":0,\"ignore_eos\":true,"
          + "\"return_tokens_as_token_ids\":true,\"return_weight_versions\":true}";
      CompletableFuture<HttpResponse<String>> running = CompletableFuture.supplyAsync(
          () -> s.post("/v1/completions", body));
      // the request is inside a forward pass, some tokens sampled: pause to keep while it runs
      assertThat(held.get().inForward.await(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      CompletableFuture<JsonNode> paused = CompletableFuture.supplyAsync(() -> s.ok("/pause?mode=keep", ""));
      // the pause has reached the engine (it waits for the iteration under way): let that iteration end
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (!s.server.enginePaused() && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
      assertThat(s.server.enginePaused()).isTrue();
      held.get().release.countDown();
      paused.get(60, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(running).isNotDone();
      s.ok("/start_weight_update", "");
      s.ok("/update_weights", updateInfo(v9));
      s.ok("/finish_weight_update", "{\"weight_version\":\"9\"}");
      assertThat(running).as("frozen until /resume").isNotDone();
      s.ok("/resume", "");

      HttpResponse<String> r = running.get(60, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      JsonNode json = TestServer.JSON.readTree(r.body());
      JsonNode spans = json.at("/choices/0/weight_versions");
      assertThat(json.at("/choices/0/logprobs/tokens")).hasSize(30);
      assertThat(spans).hasSize(2);
      assertThat(spans.get(0).get("version").asText()).isEqualTo("default"); // vLLM's label before any update
      assertThat(spans.get(0).get("start").asInt()).isZero();
      assertThat(spans.get(1).get("version").asText()).isEqualTo("9");
      assertThat(spans.get(1).get("start").asInt()).isEqualTo(spans.get(0).get("end").asInt()).isPositive();
      assertThat(spans.get(1).get("end").asInt()).isEqualTo(30);

      // the log says the update could label the completion: it arrived before the completion ended. A line is
      // written once its answer has gone out, so the client may read the log first: wait for the completion's
      List<JsonNode> lines = new java.util.ArrayList<>();
      long until = System.nanoTime() + 30_000_000_000L;
      while (lines.stream().noneMatch(l -> l.get("path").asText().equals("/v1/completions"))
          && System.nanoTime() < until) {
        lines.clear();
        for (String line : Files.exists(exchanges) ? Files.readAllLines(exchanges) : List.<String>of()) {
          try {
            lines.add(TestServer.JSON.readTree(line));
          } catch (com.fasterxml.jackson.core.JsonProcessingException partial) {
            break; // a line being written: read again
          }
        }
        Thread.sleep(10);
      }
      JsonNode completion = lines.stream().filter(l -> l.get("path").asText().equals("/v1/completions"))
          .findFirst().orElseThrow();
      JsonNode finish = lines.stream().filter(l -> l.get("path").asText().equals("/finish_weight_update"))
          .findFirst().orElseThrow();
      assertThat(completion.get("seq").asLong()).as("arrived first").isLessThan(finish.get("seq").asLong());
      assertThat(completion.get("arrived_by_end").asLong()).as("ended after the finish arrived")
          .isGreaterThanOrEqualTo(finish.get("seq").asLong());
      assertThat(finish.get("arrived_by_end").asLong()).isGreaterThanOrEqualTo(finish.get("seq").asLong());
    }
  }

  @Test
  void pauseAbort_requestHeldByTheEngine_endsWithFinishReasonAbort() throws Exception {
    try (TestServer s = TestServer.start()) {
      // paused to keep, the server takes the request and holds it; the abort then ends it
      s.ok("/pause?mode=keep", "");
      String body = "{\"prompt\":[1,10,2,12],\"max_tokens\":8,\"seed\":4}";
      CompletableFuture<HttpResponse<String>> running = CompletableFuture.supplyAsync(
          () -> s.post("/v1/completions", body));
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (s.server.engineStats().waiting() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
      assertThat(running).isNotDone();
      s.ok("/pause?mode=abort", "");
      HttpResponse<String> r = running.get();
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      assertThat(TestServer.JSON.readTree(r.body()).at("/choices/0/finish_reason").asText()).isEqualTo("abort");
      s.ok("/resume", "");
    }
  }
}
