package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.WeightsFile;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client against a stand-in server on loopback that answers as vLLM does (or fails as asked). */
class OpenAiBackendTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ModelWeights WEIGHTS = ModelWeights.init(ModelSpec.tiny(14), 1);

  @TempDir Path dir;
  private HttpServer server;
  private String url;
  private final InMemorySpanExporter spans = InMemorySpanExporter.create();
  private OpenTelemetrySdk otel;
  private final List<Map<String, String>> seen = new CopyOnWriteArrayList<>();
  private final List<String> adminCalls = new CopyOnWriteArrayList<>();
  private final Map<String, String> adapters = new ConcurrentHashMap<>();
  private final List<JsonNode> updates = new CopyOnWriteArrayList<>();
  private final AtomicInteger concurrent = new AtomicInteger();
  private final AtomicInteger peak = new AtomicInteger();
  private volatile Responder completions = OpenAiBackendTest::echoFirstPromptToken;
  private OpenAiBackend backend;

  /** How the stand-in answers a completion: status and body for a parsed request. */
  interface Responder {
    Object[] answer(JsonNode request) throws Exception;
  }

  @BeforeEach
  void start() throws IOException {
    otel = OpenTelemetrySdk.builder().setTracerProvider(
        SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build()).build();
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(Executors.newFixedThreadPool(8));
    server.createContext("/health", ex -> reply(ex, 200, ""));
    server.createContext("/v1/completions", this::completion);
    server.createContext("/v1/load_lora_adapter", ex -> {
      JsonNode b = JSON.readTree(ex.getRequestBody());
      String name = b.get("lora_name").asText();
      adminCalls.add("load " + name);
      if (adapters.putIfAbsent(name, b.get("lora_path").asText()) != null) {
        reply(ex, 400, "{\"error\":{\"message\":\"The lora adapter '" + name + "' has already been loaded.\"}}");
        return;
      }
      reply(ex, 200, "Success: LoRA adapter '" + name + "' added successfully.");
    });
    server.createContext("/v1/unload_lora_adapter", ex -> {
      JsonNode b = JSON.readTree(ex.getRequestBody());
      adminCalls.add("unload " + b.get("lora_name").asText());
      adapters.remove(b.get("lora_name").asText());
      reply(ex, 200, "Success");
    });
    // vLLM's native weight-update routes (its RL API): recorded in order
    server.createContext("/init_weight_transfer_engine", ex -> {
      JsonNode b = JSON.readTree(ex.getRequestBody());
      adminCalls.add("init " + b.get("init_info").path("transport").asText());
      reply(ex, 200, "{\"message\":\"Weight transfer initialized\"}");
    });
    server.createContext("/pause", ex -> {
      adminCalls.add("pause " + ex.getRequestURI().getQuery());
      reply(ex, 200, "{\"status\":\"paused\"}");
    });
    server.createContext("/resume", ex -> {
      adminCalls.add("resume");
      reply(ex, 200, "{\"status\":\"resumed\"}");
    });
    server.createContext("/start_weight_update", ex -> {
      adminCalls.add("start");
      reply(ex, 200, "{\"message\":\"Weight update started\"}");
    });
    server.createContext("/update_weights", ex -> {
      JsonNode info = JSON.readTree(ex.getRequestBody()).get("update_info");
      updates.add(info);
      adminCalls.add("update");
      reply(ex, 200, "{\"message\":\"Weights updated\"}");
    });
    server.createContext("/finish_weight_update", ex -> {
      adminCalls.add("finish " + JSON.readTree(ex.getRequestBody()).get("weight_version").asText());
      reply(ex, 200, "{\"message\":\"Weight update finished\"}");
    });
    server.createContext("/v1/models", ex -> {
      StringBuilder data = new StringBuilder("{\"id\":\"ravel-tiny\"}");
      adapters.forEach((a, root) -> data.append(",{\"id\":\"").append(a).append("\",\"root\":\"").append(root)
          .append("\"}"));
      reply(ex, 200, "{\"object\":\"list\",\"data\":[" + data + "]}");
    });
    server.start();
    url = "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @AfterEach
  void stop() {
    if (backend != null) {
      backend.close();
    }
    server.stop(0);
    otel.close();
  }

  private void completion(HttpExchange ex) throws IOException {
    int now = concurrent.incrementAndGet();
    peak.accumulateAndGet(now, Math::max);
    try {
      JsonNode request = JSON.readTree(ex.getRequestBody());
      seen.add(Map.of("traceparent", String.valueOf(ex.getRequestHeaders().getFirst("traceparent")),
          "x-request-id", String.valueOf(ex.getRequestHeaders().getFirst("X-Request-Id")),
          "model", request.get("model").asText()));
      Object[] a = completions.answer(request);
      reply(ex, (Integer) a[0], (String) a[1]);
    } catch (Exception e) {
      reply(ex, 500, "stand-in failed: " + e);
    } finally {
      concurrent.decrementAndGet();
    }
  }

  /**
   * Choice i = (the prompt's first token + i + seed % 3) then EOS (13), log-probs -0.5 and -0.25: what a
   * request of n samples seeded seed + i would give one by one.
   */
  private static Object[] echoFirstPromptToken(JsonNode request) throws InterruptedException {
    Thread.sleep(20);
    int first = request.get("prompt").get(0).asInt();
    int n = request.path("n").asInt(1);
    long seed = request.get("seed").asLong();
    StringBuilder choices = new StringBuilder();
    for (int i = 0; i < n; i++) {
      choices.append(i == 0 ? "" : ",").append("{\"index\":").append(i).append(",\"logprobs\":{\"tokens\":[\"token_id:")
          .append(first + Math.floorMod(seed + i, 3)).append("\",\"token_id:13\"],\"token_logprobs\":[-0.5,-0.25]},"
              + "\"finish_reason\":\"stop\"}");
    }
    return new Object[] {200, "{\"model\":\"" + request.get("model").asText() + "\",\"choices\":[" + choices + "]}"};
  }

  private static void reply(HttpExchange ex, int status, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
    if (b.length > 0) {
      ex.getResponseBody().write(b);
    }
    ex.close();
  }

  private OpenAiBackend backend(ServerBackendSpec.Builder b) {
    backend = OpenAiBackend.start(b.build(), "ravel-tiny", WEIGHTS, 4096, 64, otel, dir);
    return backend;
  }

  private ServerBackendSpec.Builder given() {
    return ServerBackendSpec.builder().servers(List.of(url));
  }

  private ServerBackendSpec.Builder lora() {
    return given().weightSync(ServerBackendSpec.SYNC_LORA);
  }

  /** A request whose stand-in completion is {@code firstToken} then EOS (its seed is a multiple of 3). */
  private static GenerationRequest request(String id, int firstToken, TraceCarrier carrier) {
    return GenerationRequest.of(id, new int[] {firstToken, 10},
        SamplingParams.builder().maxTokens(4).seed(3L * firstToken).build(), carrier);
  }

  /** Sample {@code g} of a GRPO group {@code id}: {@code <id>-<g>}, seed 30 + g, the same prompt. */
  private static GenerationRequest sample(String id, int g) {
    return GenerationRequest.of(id + "-" + g, new int[] {5, 10},
        SamplingParams.builder().maxTokens(4).seed(30 + g).build(), null);
  }

  @Test
  void generate_resultsComeBackInRequestOrderWithTokensAndLogprobs() {
    List<GenerationRequest> requests = IntStream.range(0, 12).mapToObj(i -> request("r" + i, i, null)).toList();

    List<GenerationResult> results = backend(given()).generate(requests);

    assertThat(results).extracting(GenerationResult::requestId)
        .containsExactlyElementsOf(requests.stream().map(GenerationRequest::requestId).toList());
    for (int i = 0; i < results.size(); i++) {
      assertThat(results.get(i).completionTokens()).containsExactly(i, 13);
      assertThat(results.get(i).logprobs()).containsExactly(-0.5f, -0.25f);
      assertThat(results.get(i).finishReason()).isEqualTo(FinishReason.STOP);
      assertThat(results.get(i).weightVersion()).isEqualTo(WEIGHTS.version());
    }
    assertThat(seen).extracting(m -> m.get("x-request-id")).containsExactlyInAnyOrder(
        requests.stream().map(GenerationRequest::requestId).toArray(String[]::new));
    assertThat(backend.stats().requestsFinished(FinishReason.STOP)).isEqualTo(12);
    assertThat(backend.stats().generationTokens()).isEqualTo(24);
  }

  @Test
  void generate_aGroupGoesAsOneRequestWithNChoicesAndComesBackAsItsSamples() {
    List<GenerationRequest> requests = List.of(sample("s1-p0", 0), sample("s1-p0", 1), sample("s1-p0", 2),
        sample("s1-p1", 0), sample("s1-p1", 1), request("lone", 4, null));

    List<GenerationResult> results = backend(given()).generate(requests);

    assertThat(seen).extracting(m -> m.get("x-request-id")).containsExactlyInAnyOrder("s1-p0", "s1-p1", "lone");
    assertThat(results).extracting(GenerationResult::requestId)
        .containsExactly("s1-p0-0", "s1-p0-1", "s1-p0-2", "s1-p1-0", "s1-p1-1", "lone");
    // sample g (seed 30 + g) gets 5 + (30 + g) % 3 as it would alone
    assertThat(results.subList(0, 5)).extracting(r -> r.completionTokens()[0]).containsExactly(5, 6, 7, 5, 6);
    assertThat(results.get(5).completionTokens()).containsExactly(4, 13);
  }

  @Test
  void groups_cutsOnlyRunsThatNChoicesReproduce() {
    GenerationRequest otherSeed = GenerationRequest.of("g-1", new int[] {5, 10},
        SamplingParams.builder().maxTokens(4).seed(99).build(), null);
    GenerationRequest otherPrompt = GenerationRequest.of("h-1", new int[] {6, 10},
        SamplingParams.builder().maxTokens(4).seed(31).build(), null);

    assertThat(OpenAiBackend.groups(List.of(sample("g", 0), sample("g", 1), sample("g", 2))))
        .extracting(List::size).containsExactly(3);
    assertThat(OpenAiBackend.groups(List.of(sample("g", 0), otherSeed))).extracting(List::size).containsExactly(1, 1);
    assertThat(OpenAiBackend.groups(List.of(sample("h", 0), otherPrompt))).extracting(List::size).containsExactly(1, 1);
    assertThat(OpenAiBackend.groups(List.of(sample("g", 1), sample("g", 2)))).extracting(List::size)
        .containsExactly(1, 1);
    assertThat(OpenAiBackend.groups(List.of(sample("g", 0), sample("h", 1)))).extracting(List::size)
        .containsExactly(1, 1);
  }

  @Test
  void generate_writesTheCarriersContextAsTraceparent() {
    Span parent = otel.getTracer("test").spanBuilder("rl.worker.generate").startSpan();
    TraceCarrier carrier = TraceCarrier.capture(Context.root().with(parent));

    backend(given()).generate(request("r1", 3, carrier));
    parent.end();

    assertThat(seen).hasSize(1);
    assertThat(seen.get(0).get("traceparent")).startsWith("00-" + parent.getSpanContext().getTraceId() + "-"
        + parent.getSpanContext().getSpanId() + "-");
  }

  @Test
  void generate_tracedByRatio_sendsTheSampledFlagOnlyForRequestsInTheEngineSamplersShare() {
    Span parent = otel.getTracer("test").spanBuilder("rl.worker.generate").startSpan();
    TraceCarrier carrier = TraceCarrier.capture(Context.root().with(parent));
    backend = OpenAiBackend.start(given().build(), "ravel-tiny", WEIGHTS, 4096, 64, otel, dir,
        OpenAiBackend.tracedByRatio(true, 0.5));
    List<GenerationRequest> requests = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      requests.add(request("t" + i, 3, carrier));
    }

    backend.generate(requests);
    parent.end();

    assertThat(seen).hasSize(40);
    int sampled = 0;
    for (Map<String, String> r : seen) {
      String id = r.get("x-request-id");
      String traceparent = r.get("traceparent");
      // the same trace and parent span either way; only the flag says whether the server should trace it
      assertThat(traceparent).startsWith("00-" + parent.getSpanContext().getTraceId() + "-"
          + parent.getSpanContext().getSpanId() + "-");
      boolean inShare = dev.ravel.workers.engine.RequestSampler.inRatio(id, 0.5);
      int flags = Integer.parseInt(traceparent.substring(traceparent.lastIndexOf('-') + 1), 16);
      assertThat(flags & 1).as("%s's sampled flag in %s", id, traceparent).isEqualTo(inShare ? 1 : 0);
      assertThat(flags & ~1).as("the other flags are the parent's").isEqualTo(
          parent.getSpanContext().getTraceFlags().asByte() & ~1);
      sampled += inShare ? 1 : 0;
    }
    assertThat(sampled).isBetween(1, 39); // both decisions were exercised
  }

  @Test
  void tracedByRatio_engineTracingOff_sendsNothingSampled() {
    assertThat(OpenAiBackend.tracedByRatio(false, 1.0).test("a")).isFalse();
    assertThat(OpenAiBackend.tracedByRatio(true, 1.0).test("a")).isTrue();
    assertThat(OpenAiBackend.tracedByRatio(true, 0.0).test("a")).isFalse();
  }

  @Test
  void generate_serverAnswers400_errorResultWithTheServersMessageAndAnErrorSpan() {
    completions = r -> new Object[] {400, "{\"error\":{\"message\":\"max_tokens: must be at least 1 (got 0)\","
        + "\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}"};
    Span parent = otel.getTracer("test").spanBuilder("rl.worker.generate").startSpan();

    GenerationResult r = backend(given()).generate(request("r1", 3, TraceCarrier.capture(Context.root().with(parent))));
    parent.end();

    assertThat(r.succeeded()).isFalse();
    assertThat(r.error()).contains(url + "/v1/completions").contains("HTTP 400")
        .contains("max_tokens: must be at least 1 (got 0)");
    assertThatThrownBy(r::requireSucceeded).hasMessageContaining("max_tokens: must be at least 1");
    SpanData span = spans.getFinishedSpanItems().stream()
        .filter(s -> s.getName().equals(SpanNames.HTTP_REQUEST)).findFirst().orElseThrow();
    assertThat(span.getKind()).isEqualTo(SpanKind.CLIENT);
    assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(span.getParentSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
    assertThat(span.getAttributes().get(RavelAttributes.URL_FULL)).isEqualTo(url + "/v1/completions");
    assertThat(span.getAttributes().get(RavelAttributes.HTTP_RESPONSE_STATUS_CODE)).isEqualTo(400L);
    assertThat(backend.stats().requestsFinished(FinishReason.ERROR)).isEqualTo(1);
  }

  @Test
  void generate_malformedBody_errorResultSaysMalformed() {
    completions = r -> new Object[] {200, "{\"choices\": [}"};

    GenerationResult r = backend(given()).generate(request("r1", 3, null));

    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).contains("malformed response").contains("not JSON");
  }

  @Test
  void generate_slowerThanTheRequestTimeout_errorResultSaysTimeout() throws InterruptedException {
    // the stand-in answers only after the client has given up, however slowly either side runs (the 60 s bound
    // is a hang guard that frees the server's thread)
    CountDownLatch gaveUp = new CountDownLatch(1);
    completions = r -> {
      gaveUp.await(60, TimeUnit.SECONDS);
      return echoFirstPromptToken(r);
    };

    GenerationResult r;
    try {
      r = backend(given().requestTimeout(Duration.ofMillis(300))).generate(request("r1", 3, null));
    } finally {
      gaveUp.countDown();
    }

    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).contains("no response within the request timeout");
    SpanData span = spans.getFinishedSpanItems().get(0);
    assertThat(span.getAttributes().get(RavelAttributes.HTTP_RESPONSE_STATUS_CODE)).isNull();
  }

  @Test
  void generate_serverGoneAfterStart_errorResultSaysConnectionRefused() {
    backend(given());
    server.stop(0);

    GenerationResult r = backend.generate(request("r1", 3, null));

    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).contains(url).contains("connection refused");
  }

  @Test
  void generate_keepsAtMostMaxInFlightRequestsPerServer() {
    // the stand-in holds every request until three are in flight at once, so the limit is reached whatever
    // the timing; a client that sends fewer at a time fails the peak check (after the 30 s hang guard)
    CountDownLatch threeInFlight = new CountDownLatch(1);
    completions = r -> {
      if (concurrent.get() >= 3) {
        threeInFlight.countDown();
      }
      if (!threeInFlight.await(30, TimeUnit.SECONDS)) {
        threeInFlight.countDown(); // a hang guard: let the rest through, the peak check reports the failure
      }
      return echoFirstPromptToken(r);
    };
    List<GenerationRequest> requests = IntStream.range(0, 16).mapToObj(i -> request("r" + i, i, null)).toList();

    List<GenerationResult> results = backend(given().maxInFlight(3)).generate(requests);

    assertThat(results).allSatisfy(r -> assertThat(r.succeeded()).as(String.valueOf(r.error())).isTrue());
    assertThat(peak.get()).isEqualTo(3);
    assertThat(seen).hasSize(16);
  }

  @Test
  void start_serverDown_namesItsUrl() {
    server.stop(0);

    assertThatThrownBy(() -> OpenAiBackend.checkServers(given().build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("servers: " + url + "/health is not reachable (connection refused)");
  }

  @Test
  void updateWeights_loadsAnAdapterPerVersionRequestsUnderItAndKeepsOnlyTheLastTwo() {
    backend(lora());

    for (long v = 2; v <= 4; v++) {
      backend.updateWeights(WEIGHTS.withVersion(v));
    }
    GenerationResult r = backend.generate(request("r1", 3, null));

    // the initial weights first (a shared server's base model may hold another run's), then each version
    assertThat(adminCalls).containsExactly("load ravel-tiny-v0", "load ravel-tiny-v2", "load ravel-tiny-v3",
        "unload ravel-tiny-v0", "load ravel-tiny-v4", "unload ravel-tiny-v2");
    assertThat(seen.get(seen.size() - 1).get("model")).isEqualTo("ravel-tiny-v4");
    assertThat(r.weightVersion()).isEqualTo(4);
    assertThat(WeightsFile.read(Path.of(adapters.get("ravel-tiny-v4"))).version()).isEqualTo(4);
  }

  @Test
  void updateWeights_twoRunsOnOneServer_eachLoadsAndRequestsItsOwnAdapters() {
    OpenAiBackend first = OpenAiBackend.start(lora().build().withAdapterTag("run-a-1"), "ravel-tiny", WEIGHTS, 4096,
        64, otel, dir);
    try {
      first.updateWeights(WEIGHTS.withVersion(2));
      backend = OpenAiBackend.start(lora().build().withAdapterTag("run-b-1"), "ravel-tiny", WEIGHTS, 4096, 64, otel,
          dir);

      backend.updateWeights(WEIGHTS.withVersion(2)); // the same version number: another run's weights
      GenerationResult r = backend.generate(request("r1", 3, null));

      assertThat(adminCalls).containsExactly("load ravel-tiny-run-a-1-v0", "load ravel-tiny-run-a-1-v2",
          "load ravel-tiny-run-b-1-v0", "load ravel-tiny-run-b-1-v2");
      assertThat(seen.get(seen.size() - 1).get("model")).isEqualTo("ravel-tiny-run-b-1-v2");
      assertThat(r.weightVersion()).isEqualTo(2);
    } finally {
      first.close();
    }
  }

  @Test
  void adapterTag_outsideLettersDigitsDotDashUnderscore_isRefused() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> given().build().withAdapterTag("a/b"))
        .hasMessageContaining("adapterTag");
  }

  @Test
  void updateWeights_aServerSharedWithAnotherWorkerThatLoadedTheVersion_isFine() {
    OpenAiBackend other = OpenAiBackend.start(lora().build(), "ravel-tiny", WEIGHTS, 4096, 64, otel, dir);
    try {
      other.updateWeights(WEIGHTS.withVersion(2));
      backend(lora());

      backend.updateWeights(WEIGHTS.withVersion(2));
      GenerationResult r = backend.generate(request("r1", 3, null));

      assertThat(adminCalls).containsExactly("load ravel-tiny-v0", "load ravel-tiny-v2", "load ravel-tiny-v0",
          "load ravel-tiny-v2");
      assertThat(r.weightVersion()).isEqualTo(2);
    } finally {
      other.close();
    }
  }

  @Test
  void updateWeights_native_pausesStartsUpdatesFinishesAndResumesInVllmsOrderWithStageSpans() throws IOException {
    backend(given()).spans(dev.ravel.telemetry.spans.Spans.create(otel,
        java.util.EnumSet.allOf(dev.ravel.telemetry.config.SpanGroup.class)));

    backend.updateWeights(WEIGHTS.withVersion(2));
    GenerationResult r = backend.generate(request("r1", 3, null));

    // at start the servers get the run's initial weights (they may serve another run's); then version 2
    assertThat(adminCalls).containsExactly("init ravel-file",
        "pause mode=wait&clear_cache=false", "start", "update", "finish " + WEIGHTS.version(), "resume",
        "pause mode=wait&clear_cache=false", "start", "update", "finish 2", "resume");
    JsonNode info = updates.get(1);
    Path file = Path.of(info.get("path").asText());
    byte[] bytes = java.nio.file.Files.readAllBytes(file);
    assertThat(info.get("sha256").asText()).isEqualTo(OpenAiBackend.sha256(bytes));
    assertThat(info.get("bytes").asLong()).isEqualTo(bytes.length);
    assertThat(WeightsFile.read(file).version()).isEqualTo(2);
    // requests name the base model: the server's weights changed under it
    assertThat(seen.get(seen.size() - 1).get("model")).isEqualTo("ravel-tiny");
    assertThat(r.weightVersion()).isEqualTo(2);
    List<String> stages = spans.getFinishedSpanItems().stream().map(SpanData::getName)
        .filter(n -> n.startsWith("rl.refit.")).toList();
    assertThat(stages).containsExactly(SpanNames.REFIT_TRANSFER, SpanNames.REFIT_PAUSE, SpanNames.REFIT_LOAD,
        SpanNames.REFIT_RESUME);
    SpanData transfer = spans.getFinishedSpanItems().stream()
        .filter(sp -> sp.getName().equals(SpanNames.REFIT_TRANSFER)).findFirst().orElseThrow();
    assertThat(transfer.getAttributes().get(RavelAttributes.REFIT_BYTES)).isEqualTo(bytes.length);
  }

  @Test
  void updateWeights_aTrainersWeightsFile_goesToEveryStageAsIsAndTheFileStays() throws IOException {
    // without initial weights (a Python trainer's run) the servers are only initialised: the driver loads its first file
    backend = OpenAiBackend.start(given().build(), "ravel-tiny", null, 4096, 64, otel, dir);
    Path file = java.nio.file.Files.writeString(dir.resolve("weights-v4.safetensors"), "trainer's bytes");
    String digest = OpenAiBackend.sha256(java.nio.file.Files.readAllBytes(file));
    dev.ravel.workers.generation.WeightsFileRef ref = new dev.ravel.workers.generation.WeightsFileRef(file.toString(),
        digest, java.nio.file.Files.size(file), 4);

    long served = backend.updateWeights(ref);
    GenerationResult r = backend.generate(request("r1", 3, null));

    assertThat(served).isEqualTo(4);
    assertThat(adminCalls).containsExactly("init ravel-file",
        "pause mode=wait&clear_cache=false", "start", "update", "finish 4", "resume");
    assertThat(updates).singleElement().satisfies(info -> {
      assertThat(info.get("path").asText()).isEqualTo(file.toString());
      assertThat(info.get("sha256").asText()).isEqualTo(digest);
      assertThat(info.get("bytes").asLong()).isEqualTo(java.nio.file.Files.size(file));
      assertThat(info.has("version")).isFalse(); // the version is finish_weight_update's
    });
    assertThat(r.weightVersion()).isEqualTo(4);
    assertThat(file).exists(); // the trainer's to keep or remove
  }

  @Test
  void updateWeights_inflightUpdates_pausesToKeep() {
    backend(given().inflightUpdates(true));

    backend.updateWeights(WEIGHTS.withVersion(3));

    assertThat(adminCalls).containsSubsequence("init ravel-file", "pause mode=keep&clear_cache=false", "start",
        "update", "finish 3", "resume");
  }

  @Test
  void updateWeights_nativeUpdateRefused_namesTheStageAndTheServersMessageAndStillResumes() {
    backend(given());
    server.removeContext("/update_weights");
    server.createContext("/update_weights", ex -> reply(ex, 400,
        "{\"error\":{\"message\":\"Invalid update_info for NCCLWeightTransferEngine\",\"code\":400}}"));

    assertThatThrownBy(() -> backend.updateWeights(WEIGHTS.withVersion(2)))
        .hasMessageContaining("update_weights").hasMessageContaining("HTTP 400")
        .hasMessageContaining("Invalid update_info for NCCLWeightTransferEngine");
    assertThat(adminCalls).last().isEqualTo("resume");
  }

  @Test
  void start_nativeAgainstAServerWithoutRavelsTransport_failsAtStartNamingTheWayOut() {
    server.removeContext("/init_weight_transfer_engine");
    server.createContext("/init_weight_transfer_engine", ex -> reply(ex, 400,
        "{\"error\":{\"message\":\"Invalid init_info for NCCLWeightTransferEngine: unexpected keyword argument"
            + " 'transport'\",\"code\":400}}"));

    assertThatThrownBy(() -> backend(given()))
        .hasMessageContaining(url).hasMessageContaining("refused Ravel's weight transfer")
        .hasMessageContaining("unexpected keyword argument 'transport'")
        .hasMessageContaining("generation.weight_sync: lora");
  }

  @Test
  void updateWeights_loraNameTakenByOtherWeights_failsLoudly() {
    adapters.put("ravel-tiny-v2", "/elsewhere/weights-v2-0123456789abcdef.bin");
    backend(lora());

    assertThatThrownBy(() -> backend.updateWeights(WEIGHTS.withVersion(2)))
        .hasMessageContaining("already serves adapter ravel-tiny-v2 with other weights")
        .hasMessageContaining("/elsewhere/weights-v2-0123456789abcdef.bin");
  }

  @Test
  void generate_serverSaysWhichVersionsSampledTheTokens_resultCarriesThem() {
    completions = request -> new Object[] {200, "{\"model\":\"ravel-tiny\",\"choices\":[{\"index\":0,"
        + "\"logprobs\":{\"tokens\":[\"token_id:3\",\"token_id:4\",\"token_id:13\"],\"token_logprobs\":[-0.5,-0.5,"
        + "-0.25]},\"finish_reason\":\"stop\",\"weight_versions\":[{\"version\":\"3\",\"start\":0,\"end\":1},"
        + "{\"version\":\"4\",\"start\":1,\"end\":3}]}]}"};
    GenerationResult r = backend(given()).generate(request("r1", 3, null));

    assertThat(r.versionSpans()).containsExactly(new dev.ravel.workers.engine.VersionSpan(3, 0, 1),
        new dev.ravel.workers.engine.VersionSpan(4, 1, 3));
    assertThat(r.weightVersion()).isEqualTo(4);
    assertThat(r.oldestWeightVersion()).isEqualTo(3);
  }

  @Test
  void generate_loraAdapterServed_versionIsTheAdaptersWhateverTheServersLabel() {
    backend(lora());
    backend.updateWeights(WEIGHTS.withVersion(5));
    completions = request -> new Object[] {200, "{\"model\":\"x\",\"choices\":[{\"index\":0,\"logprobs\":{\"tokens\":"
        + "[\"token_id:13\"],\"token_logprobs\":[-0.5]},\"finish_reason\":\"stop\",\"weight_versions\":[{\"version\":"
        + "\"9\",\"start\":0,\"end\":1}]}]}"};

    GenerationResult r = backend.generate(request("r1", 3, null));

    assertThat(r.weightVersion()).isEqualTo(5);
  }

  @Test
  void generate_sendsReturnWeightVersions() {
    List<JsonNode> bodies = new CopyOnWriteArrayList<>();
    completions = request -> {
      bodies.add(request);
      return echoFirstPromptToken(request);
    };
    backend(given()).generate(request("r1", 3, null));

    assertThat(bodies.get(0).get("return_weight_versions").asBoolean()).isTrue();
  }

  @Test
  void generate_serverPausedAnswers503_sendsAgainUntilItAnswers() {
    AtomicInteger refusals = new AtomicInteger();
    completions = request -> refusals.getAndIncrement() < 2
        ? new Object[] {503, "{\"error\":{\"message\":\"paused\",\"code\":503}}"} : echoFirstPromptToken(request);

    GenerationResult r = backend(given()).generate(request("r1", 3, null));

    assertThat(r.succeeded()).as(String.valueOf(r.error())).isTrue();
    assertThat(refusals.get()).isEqualTo(3);
  }

  @Test
  void close_isIdempotentAndLaterRequestsEndWithAReason() {
    backend(given());

    backend.close();
    backend.close();

    GenerationResult r = backend.generate(request("r1", 3, null));
    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).contains("the client is closed");
  }

  @Test
  void updateWeights_refitOff_onlyRelabelsResults() {
    backend(given().refit(false));

    backend.updateWeights(WEIGHTS.withVersion(7));
    GenerationResult r = backend.generate(request("r1", 3, null));

    assertThat(adminCalls).isEmpty();
    assertThat(seen.get(0).get("model")).isEqualTo("ravel-tiny");
    assertThat(r.weightVersion()).isEqualTo(7);
  }

  @Test
  void updateWeights_serverRefuses_namesTheVersionAndTheServersMessage() {
    backend(lora());
    server.removeContext("/v1/load_lora_adapter");
    server.createContext("/v1/load_lora_adapter", ex -> reply(ex, 400,
        "{\"error\":{\"message\":\"The lora adapter 'x' has already been loaded.\",\"code\":400}}"));

    assertThatThrownBy(() -> backend.updateWeights(WEIGHTS.withVersion(2)))
        .hasMessageContaining("weight version 2").hasMessageContaining("HTTP 400")
        .hasMessageContaining("has already been loaded");
  }

  @Test
  void generate_spreadsRequestsOverServersRoundRobin() throws IOException {
    HttpServer second = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    List<String> hits = Collections.synchronizedList(new ArrayList<>());
    second.createContext("/health", ex -> reply(ex, 200, ""));
    second.createContext("/v1/completions", ex -> {
      hits.add("second");
      try {
        Object[] a = echoFirstPromptToken(JSON.readTree(ex.getRequestBody()));
        reply(ex, (Integer) a[0], (String) a[1]);
      } catch (InterruptedException e) {
        reply(ex, 500, "");
      }
    });
    second.start();
    try {
      String url2 = "http://127.0.0.1:" + second.getAddress().getPort();
      backend(ServerBackendSpec.builder().servers(List.of(url, url2)).refit(false));

      backend.generate(IntStream.range(0, 10).mapToObj(i -> request("r" + i, i, null)).toList());

      assertThat(hits).hasSize(5);
      assertThat(seen).hasSize(5);
    } finally {
      second.stop(0);
    }
  }
}
