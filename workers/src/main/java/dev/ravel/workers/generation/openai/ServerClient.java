package dev.ravel.workers.generation.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.RequestStats;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The client of one inference server: completions with at most {@code maxInFlight} in flight, the
 * caller's trace context in {@code traceparent}/{@code tracestate} (written by the W3C propagator), and the
 * admin routes (health, models, LoRA load/unload, metrics). A completion that fails (connection refused,
 * timeout, an HTTP error status, a body that breaks the protocol) becomes an ERROR span
 * ({@link SpanNames#HTTP_REQUEST}, kind CLIENT, with the URL and status) and an
 * {@link FinishReason#ERROR} result carrying the server's own message; it never throws.
 */
final class ServerClient {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TextMapSetter<HttpRequest.Builder> HEADERS = (b, k, v) -> b.header(k, v);

  /** Whether a request, by its id, is sent with its traceparent sampled. */
  private final java.util.function.Predicate<String> traced;
  private final URI base;
  private final HttpClient http;
  private final Executor senders;
  private final Semaphore inFlight;
  private final Duration requestTimeout;
  private final Tracer tracer;
  private final LongSupplier clock;
  /**
   * Whether the server's weight-version labels name Ravel's versions (the native protocol labels every update with
   * its version); with LoRA adapters they do not (vLLM labels tokens with its engine's label whatever the adapter),
   * and a result's version is the one its adapter was loaded as.
   */
  private volatile boolean labelsAreVersions = true;


  /**
   * @param senders where requests are sent and awaited, one thread each (at most {@code maxInFlight} at once)
   */
  ServerClient(String baseUrl, HttpClient http, Executor senders, int maxInFlight, Duration requestTimeout,
      Tracer tracer, LongSupplier epochNanos) {
    this(baseUrl, http, senders, maxInFlight, requestTimeout, tracer, epochNanos, id -> true);
  }

  /**
   * As above; {@code traced} decides, by the HTTP request's id, the sampled flag its {@code traceparent} carries:
   * a server whose tracer is parent-based (vLLM's, {@code ravel serve --trace-sampler parentbased}) traces the
   * request only when it is set. The client's own spans are not affected.
   */
  ServerClient(String baseUrl, HttpClient http, Executor senders, int maxInFlight, Duration requestTimeout,
      Tracer tracer, LongSupplier epochNanos, java.util.function.Predicate<String> traced) {
    this.traced = traced;
    this.base = URI.create(baseUrl);
    this.http = http;
    this.senders = senders;
    this.inFlight = new Semaphore(maxInFlight);
    this.requestTimeout = requestTimeout;
    this.tracer = tracer;
    this.clock = epochNanos;
  }

  String baseUrl() {
    return base.toString();
  }

  /**
   * Sends {@code group} as one request to {@code model} (waiting for a free in-flight slot first) and
   * completes with one result per request, in order; {@link FinishReason#ERROR} ones when it failed. The
   * group is either one request, sent under its own id, or the samples {@code <id>-0 .. <id>-(n-1)} of one
   * prompt seeded {@code seed .. seed + n - 1} (see {@link OpenAiBackend#groups}), sent as {@code n} choices
   * under {@code <id>}.
   *
   * @param version the weight version {@code model} names, recorded on the results
   */
  CompletableFuture<List<GenerationResult>> complete(List<GenerationRequest> group, String model, long version) {
    URI url = base.resolve("/v1/completions");
    GenerationRequest first = group.get(0);
    String requestId = group.size() == 1 ? first.requestId() : groupId(first);
    Context parent = first.carrier().extract();
    HttpRequest.Builder b = HttpRequest.newBuilder(url)
        .timeout(requestTimeout)
        .header("Content-Type", "application/json")
        .header("X-Request-Id", requestId)
        .POST(HttpRequest.BodyPublishers.ofByteArray(CompletionsProtocol.requestBody(first, group.size(), model)));
    W3CTraceContextPropagator.getInstance().inject(traced.test(requestId) ? parent : unsampled(parent), b, HEADERS);
    HttpRequest httpRequest = b.build();
    Exchange x = new Exchange(group, requestId, parent, url, version);
    try {
      inFlight.acquire();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return CompletableFuture.completedFuture(failed(x, clock.getAsLong(), 0, "interrupted",
          "interrupted before sending"));
    }
    try {
      // a blocking send on a thread of our own: the client's sendAsync runs its completions on the JDK's
      // default async pool, which on a 2-core machine starts a thread per task
      return CompletableFuture.supplyAsync(() -> {
        try {
          return exchange(x, httpRequest);
        } finally {
          inFlight.release();
        }
      }, senders);
    } catch (RejectedExecutionException e) {
      inFlight.release();
      return CompletableFuture.completedFuture(failed(x, clock.getAsLong(), 0, "closed", "the client is closed"));
    }
  }

  /** {@code context} with its span's sampled flag cleared (the same trace, parent span and other flags). */
  static Context unsampled(Context context) {
    io.opentelemetry.api.trace.SpanContext sc = Span.fromContext(context).getSpanContext();
    if (!sc.isValid() || !sc.isSampled()) {
      return context;
    }
    return context.with(Span.wrap(io.opentelemetry.api.trace.SpanContext.create(sc.getTraceId(), sc.getSpanId(),
        io.opentelemetry.api.trace.TraceFlags.fromByte((byte) (sc.getTraceFlags().asByte() & ~0x01)),
        sc.getTraceState())));
  }

  /** One HTTP request: the generation requests it carries, its id, its parent context, URL and version. */
  private record Exchange(List<GenerationRequest> group, String requestId, Context parent, URI url, long version) {}

  private List<GenerationResult> exchange(Exchange x, HttpRequest httpRequest) {
    long start = clock.getAsLong();
    HttpResponse<byte[]> response;
    long deadline = System.nanoTime() + requestTimeout.toNanos();
    long backoffMs = 20;
    try {
      while (true) {
        response = send(httpRequest);
        // 503 while a server is paused for a weight update (vLLM's RetryableRequestError): safe to send again
        if (response.statusCode() != 503 || System.nanoTime() + backoffMs * 1_000_000L > deadline) {
          break;
        }
        Thread.sleep(backoffMs);
        backoffMs = Math.min(1000, backoffMs * 2);
      }
    } catch (IOException e) {
      return failed(x, start, 0, e.getClass().getName(), describe(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return failed(x, start, 0, "interrupted", "interrupted while waiting for the response");
    }
    if (response.statusCode() != 200) {
      return failed(x, start, response.statusCode(), String.valueOf(response.statusCode()),
          "HTTP " + response.statusCode() + ": " + CompletionsProtocol.errorMessage(response.body()));
    }
    List<CompletionsProtocol.Completion> completions;
    try {
      completions = CompletionsProtocol.parse(response.body(), x.group().size());
    } catch (RuntimeException e) {
      return failed(x, start, 200, "malformed_response", "malformed response: " + e.getMessage());
    }
    List<GenerationResult> out = new ArrayList<>(completions.size());
    for (int i = 0; i < completions.size(); i++) {
      out.add(result(x.group().get(i), completions.get(i), x.version(), start));
    }
    return out;
  }

  /**
   * Sends {@code request}, once more on a new connection when the connection it went out on was closed before any
   * answer came. A server closes an idle keep-alive connection after a while (uvicorn, vLLM's, after 5 s), and a
   * request sent on it just then meets the close unread; the JDK's client sends such a request again itself only
   * for GET. A server that read the request and then died looks the same to the client, but the second send then
   * finds nothing listening and fails as the first would have.
   */
  private HttpResponse<byte[]> send(HttpRequest request) throws IOException, InterruptedException {
    try {
      return http.send(request, HttpResponse.BodyHandlers.ofByteArray());
    } catch (IOException e) {
      if (!closedBeforeAnswer(e)) {
        throw e;
      }
      return http.send(request, HttpResponse.BodyHandlers.ofByteArray());
    }
  }

  /**
   * Whether {@code e} says the connection was closed before any byte of the answer: the JDK client's message for it
   * ({@code HTTP/1.1 header parser received no bytes}), or its internal {@code ConnectionExpiredException}.
   */
  static boolean closedBeforeAnswer(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t.getClass().getSimpleName().equals("ConnectionExpiredException")
          || String.valueOf(t.getMessage()).contains("header parser received no bytes")) {
        return true;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  private static String describe(Throwable t) {
    if (t instanceof HttpConnectTimeoutException) {
      return "connect timed out";
    }
    if (t instanceof HttpTimeoutException) {
      return "no response within the request timeout";
    }
    if (t instanceof ConnectException) {
      return "connection refused";
    }
    return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
  }

  /** See {@link #labelsAreVersions}; true by default. */
  ServerClient labelsAreVersions(boolean v) {
    this.labelsAreVersions = v;
    return this;
  }

  /**
   * The server's weight versions of a completion as Ravel versions: each label read as a number (Ravel labels a
   * version by its number), {@code expected} for a label that is not one (a server that never had an update
   * labels its weights {@code default}).
   */
  static List<dev.ravel.workers.engine.VersionSpan> versionSpans(CompletionsProtocol.Completion c, long expected) {
    List<dev.ravel.workers.engine.VersionSpan> out = new ArrayList<>(c.versions().size());
    for (CompletionsProtocol.LabelledSpan s : c.versions()) {
      long v;
      try {
        v = Long.parseLong(s.label());
      } catch (NumberFormatException e) {
        v = expected;
      }
      if (!out.isEmpty() && out.get(out.size() - 1).version() == v) {
        var last = out.remove(out.size() - 1);
        out.add(new dev.ravel.workers.engine.VersionSpan(v, last.start(), s.end()));
      } else {
        out.add(new dev.ravel.workers.engine.VersionSpan(v, s.start(), s.end()));
      }
    }
    if (out.isEmpty() && c.tokens().length > 0) {
      out.add(new dev.ravel.workers.engine.VersionSpan(expected, 0, c.tokens().length));
    }
    return out;
  }

  private GenerationResult result(GenerationRequest request, CompletionsProtocol.Completion c, long version,
      long start) {
    long finish = Math.max(start, clock.getAsLong());
    int[] prompt = request.promptTokens();
    List<dev.ravel.workers.engine.VersionSpan> spans = labelsAreVersions ? versionSpans(c, version)
        : c.tokens().length == 0 ? List.of() : List.of(new dev.ravel.workers.engine.VersionSpan(version, 0,
            c.tokens().length));
    RequestStats stats = RequestStats.builder()
        .arrivalEpochNanos(start)
        .finishEpochNanos(finish)
        .promptTokens(prompt.length)
        .completionTokens(c.tokens().length)
        .build();
    return GenerationResult.builder()
        .requestId(request.requestId())
        .promptTokens(prompt)
        .completionTokens(c.tokens())
        .logprobs(c.logprobs())
        .finishReason(c.finishReason())
        .weightVersion(spans.isEmpty() ? GenerationResult.NO_VERSION : spans.get(spans.size() - 1).version())
        .versionSpans(spans)
        .stats(stats)
        .build();
  }

  /** Records the failed request's ERROR span and returns an ERROR result for each request it carried. */
  private List<GenerationResult> failed(Exchange x, long start, int status, String errorType, String message) {
    long finish = Math.max(start, clock.getAsLong());
    String text = "POST " + x.url() + " (request " + x.requestId() + "): " + message;
    try {
      AttributesBuilder a = Attributes.builder()
          .put(RavelAttributes.URL_FULL, x.url().toString())
          .put(RavelAttributes.HTTP_REQUEST_METHOD, "POST")
          .put(EngineNames.SERVER_ADDRESS, x.url().getHost())
          .put(EngineNames.SERVER_PORT, (long) x.url().getPort())
          .put(RavelAttributes.ERROR_TYPE, errorType)
          .put(EngineNames.REQUEST_ID, x.requestId())
          .put(EngineNames.REQUEST_N, (long) x.group().size());
      if (status > 0) {
        a.put(RavelAttributes.HTTP_RESPONSE_STATUS_CODE, (long) status);
      }
      Span span = tracer.spanBuilder(SpanNames.HTTP_REQUEST)
          .setParent(x.parent())
          .setSpanKind(SpanKind.CLIENT)
          .setStartTimestamp(start, TimeUnit.NANOSECONDS)
          .setAllAttributes(a.build())
          .startSpan();
      span.setStatus(StatusCode.ERROR, text);
      span.end(finish, TimeUnit.NANOSECONDS);
    } catch (RuntimeException e) {
      // telemetry never breaks generation; the results still carry the reason
    }
    List<GenerationResult> out = new ArrayList<>(x.group().size());
    for (GenerationRequest r : x.group()) {
      out.add(GenerationResult.builder()
          .requestId(r.requestId())
          .promptTokens(r.promptTokens())
          .finishReason(FinishReason.ERROR)
          .error(text)
          .stats(RequestStats.builder().arrivalEpochNanos(start).finishEpochNanos(finish)
              .promptTokens(r.promptTokens().length).build())
          .build());
    }
    return out;
  }

  /**
   * Waits until {@code GET /health} answers 200.
   *
   * @throws IllegalStateException naming the URL and why, when it does not within the timeout
   */
  void checkHealth(Duration timeout) {
    URI url = base.resolve("/health");
    try {
      HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(url).timeout(timeout).GET().build(),
          HttpResponse.BodyHandlers.ofByteArray());
      if (r.statusCode() != 200) {
        throw new IllegalStateException(url + " answered HTTP " + r.statusCode() + ": "
            + CompletionsProtocol.errorMessage(r.body()));
      }
    } catch (IOException e) {
      throw new IllegalStateException(url + " is not reachable (" + describe(e) + ")", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while checking " + url, e);
    }
  }

  /** The ids of {@code GET /v1/models} (the base model and any loaded adapters). */
  List<String> models() {
    JsonNode root = json(send("GET", "/v1/models", null));
    List<String> ids = new ArrayList<>();
    root.path("data").forEach(m -> ids.add(m.path("id").asText()));
    return ids;
  }

  /** The ids of {@code GET /v1/models} with each one's {@code root} (for an adapter, the path it was loaded from). */
  Map<String, String> modelRoots() {
    JsonNode root = json(send("GET", "/v1/models", null));
    Map<String, String> out = new java.util.LinkedHashMap<>();
    root.path("data").forEach(m -> out.put(m.path("id").asText(), m.path("root").asText("")));
    return out;
  }

  /** vLLM's {@code POST /v1/load_lora_adapter}: loads the weights at {@code path} as adapter {@code name}. */
  void loadAdapter(String name, String path) {
    send("POST", "/v1/load_lora_adapter", Map.of("lora_name", name, "lora_path", path));
  }

  /** vLLM's {@code POST /v1/unload_lora_adapter}. */
  void unloadAdapter(String name) {
    send("POST", "/v1/unload_lora_adapter", Map.of("lora_name", name));
  }

  /** vLLM's {@code POST /init_weight_transfer_engine {"init_info": ...}}. */
  void initWeightTransfer(Map<String, Object> initInfo) {
    send("POST", "/init_weight_transfer_engine", Map.of("init_info", initInfo));
  }

  /** vLLM's {@code POST /pause?mode=<mode>&clear_cache=false}: returns once the server has paused. */
  void pause(String mode) {
    send("POST", "/pause?mode=" + mode + "&clear_cache=false", null);
  }

  /** vLLM's {@code POST /resume}. */
  void resume() {
    send("POST", "/resume", null);
  }

  /** vLLM's {@code POST /start_weight_update}. */
  void startWeightUpdate() {
    send("POST", "/start_weight_update", null);
  }

  /** vLLM's {@code POST /update_weights {"update_info": ...}}. */
  void updateWeights(Map<String, Object> updateInfo) {
    send("POST", "/update_weights", Map.of("update_info", updateInfo));
  }

  /** vLLM's {@code POST /finish_weight_update {"weight_version": ...}}. */
  void finishWeightUpdate(String weightVersion) {
    send("POST", "/finish_weight_update", Map.of("weight_version", weightVersion));
  }

  /** vLLM's {@code GET /weight_info}: the label of the weights the server serves. */
  String weightVersion() {
    return json(send("GET", "/weight_info", null)).path("weight_version").asText();
  }

  /** The Prometheus text of {@code GET /metrics}. */
  String metricsText() {
    return new String(send("GET", "/metrics", null), StandardCharsets.UTF_8);
  }

  /**
   * One admin call; its body.
   *
   * @throws IllegalStateException with the method, URL, status and the server's message, unless it answered 200
   */
  private byte[] send(String method, String path, Object body) {
    URI url = base.resolve(path);
    try {
      HttpRequest.Builder b = HttpRequest.newBuilder(url).timeout(requestTimeout);
      if (body == null) {
        b.method(method, HttpRequest.BodyPublishers.noBody());
      } else {
        b.header("Content-Type", "application/json")
            .method(method, HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)));
      }
      HttpResponse<byte[]> r = send(b.build());
      if (r.statusCode() != 200) {
        throw new IllegalStateException(method + " " + url + ": HTTP " + r.statusCode() + ": "
            + CompletionsProtocol.errorMessage(r.body()));
      }
      return r.body();
    } catch (IOException e) {
      throw new IllegalStateException(method + " " + url + ": " + describe(e), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted: " + method + " " + url, e);
    }
  }

  private static JsonNode json(byte[] body) {
    try {
      return JSON.readTree(body);
    } catch (IOException e) {
      throw new IllegalStateException("not JSON: " + CompletionsProtocol.snippet(body), e);
    }
  }

  /** The id of the group whose first sample is {@code first} ({@code <id>-0}): one request with n = G. */
  static String groupId(GenerationRequest first) {
    String id = first.requestId();
    return id.substring(0, id.length() - 2);
  }
}
