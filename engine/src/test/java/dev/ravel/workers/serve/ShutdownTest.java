package dev.ravel.workers.serve;

import static dev.ravel.workers.serve.ErrorsTest.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.workers.engine.EngineConfig;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import io.opentelemetry.api.OpenTelemetry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(180) // a hang guard only
final class ShutdownTest {
  @Test
  void close_whileARequestIsInTheEngine_abortsItAndAnswers503() throws Exception {
    ModelWeights w = neverEos();
    EngineConfig config = EngineConfig.builder().eosToken(TestServer.TOKENIZER.eos()).maxRunningRequests(8).build();
    InferenceServer server = InferenceServer.builder().engineConfig(config).weights(w)
        .tokenizer(TestServer.TOKENIZER).openTelemetry(OpenTelemetry.noop()).build();
    int port = server.start("127.0.0.1", 0);
    HttpClient client = HttpClient.newHttpClient();
    CompletableFuture<HttpResponse<String>> pending = client.sendAsync(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + port + "/v1/completions")).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(
            "{\"prompt\":\"1+1=\",\"n\":64,\"max_tokens\":4000}")).build(), HttpResponse.BodyHandlers.ofString());
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (server.engineStats().running() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(server.engineStats().running()).as("requests running").isPositive();

    server.close();

    // the requests are aborted, not run to their 4,000 tokens: the 503 below says so (the class's @Timeout is
    // the hang guard; how fast close returns is not asserted)
    HttpResponse<String> r = pending.get();
    assertError(r, 503, "ServiceUnavailableError", "generation of ");
    assertThat(r.body()).contains("was aborted: the server is shutting down");
  }

  /** The tiny model with the EOS logit's bias so low that every request runs to max_tokens. */
  static ModelWeights neverEos() {
    ModelSpec spec = ModelSpec.tiny(TestServer.TOKENIZER.vocabSize());
    float[] p = ModelWeights.init(spec, 3).params();
    p[spec.parameterCount() - spec.vocabSize() + TestServer.TOKENIZER.eos()] = -1000f;
    return ModelWeights.of(spec, 0, p);
  }
}
