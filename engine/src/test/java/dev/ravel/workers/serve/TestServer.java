package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.engine.EngineConfig;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/** A started {@link InferenceServer} on 127.0.0.1 (tiny model, spans in memory) and an HTTP client for it. */
final class TestServer implements AutoCloseable {
  static final CharTokenizer TOKENIZER = CharTokenizer.arithmetic();
  static final long INIT_SEED = 7;
  static final ObjectMapper JSON = new ObjectMapper();

  final InMemorySpanExporter spans = InMemorySpanExporter.create();
  final OpenTelemetrySdk sdk = OpenTelemetrySdk.builder()
      .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
      .build();
  final EngineConfig config;
  final ModelWeights weights;
  final InferenceServer server;
  final int port;
  final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private TestServer(UnaryOperator<EngineConfig.Builder> tweak) {
    this(tweak, m -> m, null);
  }

  private TestServer(UnaryOperator<EngineConfig.Builder> tweak,
      UnaryOperator<dev.ravel.workers.model.LanguageModel> initialModel, java.nio.file.Path exchanges) {
    this.weights = weights();
    this.config = tweak.apply(EngineConfig.builder().eosToken(TOKENIZER.eos()).tracing(true).sampleRatio(1.0))
        .build();
    this.server = InferenceServer.builder().engineConfig(config).weights(weights).tokenizer(TOKENIZER)
        .openTelemetry(sdk).initialModel(initialModel).recordExchanges(exchanges).build();
    this.port = server.start("127.0.0.1", 0);
  }

  /**
   * A server whose initial model is {@code initialModel} applied to the one of its weights, recording its exchanges
   * to {@code exchanges} ({@code ravel serve --record-exchanges}) unless null.
   */
  static TestServer withInitialModel(UnaryOperator<dev.ravel.workers.model.LanguageModel> initialModel,
      java.nio.file.Path exchanges) {
    return new TestServer(b -> b, initialModel, exchanges);
  }

  static TestServer start() {
    return new TestServer(b -> b);
  }

  static TestServer start(UnaryOperator<EngineConfig.Builder> tweak) {
    return new TestServer(tweak);
  }

  static ModelWeights weights() {
    return ModelWeights.init(ModelSpec.tiny(TOKENIZER.vocabSize()), INIT_SEED);
  }

  HttpResponse<String> post(String path, String body, Map<String, String> headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    headers.forEach(b::setHeader);
    return send(b.build());
  }

  HttpResponse<String> post(String path, String body) {
    return post(path, body, Map.of());
  }

  HttpResponse<String> get(String path) {
    return send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).GET().build());
  }

  /** POSTs and returns the JSON of a 200 answer (fails otherwise, showing the body). */
  JsonNode ok(String path, String body) {
    HttpResponse<String> r = post(path, body);
    if (r.statusCode() != 200) {
      throw new AssertionError("HTTP " + r.statusCode() + ": " + r.body());
    }
    return json(r.body());
  }

  /** GETs and returns the JSON of a 200 answer (fails otherwise, showing the body). */
  JsonNode getJson(String path) {
    HttpResponse<String> r = get(path);
    if (r.statusCode() != 200) {
      throw new AssertionError("HTTP " + r.statusCode() + ": " + r.body());
    }
    return json(r.body());
  }

  static JsonNode json(String s) {
    try {
      return JSON.readTree(s);
    } catch (IOException e) {
      throw new UncheckedIOException(s, e);
    }
  }

  List<SpanData> llmRequests() {
    return spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals(SpanNames.LLM_REQUEST)).toList();
  }

  URI uri(String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private HttpResponse<String> send(HttpRequest r) {
    try {
      return client.send(r, HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    server.close();
    sdk.close();
  }
}
