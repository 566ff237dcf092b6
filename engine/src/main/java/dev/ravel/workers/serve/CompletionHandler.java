package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationResult;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * {@code POST /v1/completions} and {@code POST /v1/chat/completions}: validates the body, submits every
 * choice to the engine under the caller's {@code traceparent}/{@code tracestate}, and answers with all
 * choices at once or, with {@code stream}, one event per choice as it finishes, then {@code [DONE]}. A
 * choice that ended in an engine error makes the response a 500 carrying the engine's message; one aborted
 * because the server is closing, a 503.
 */
final class CompletionHandler {
  private final RequestParser parser;
  private final ServedModels models;
  private final Generations generations;
  private final ResponseBodies bodies;
  private final WeightSync weightSync;
  private final java.util.function.BooleanSupplier closing;

  /**
   * @param weightSync admits completions (refused while paused for a weight update)
   * @param closing whether the server is shutting down: a choice aborted then is a 503, otherwise (a
   *     {@code pause?mode=abort}) it is answered with {@code finish_reason: abort}, as vLLM does
   */
  CompletionHandler(RequestParser parser, ServedModels models, Generations generations, ResponseBodies bodies,
      WeightSync weightSync, java.util.function.BooleanSupplier closing) {
    this.parser = parser;
    this.models = models;
    this.generations = generations;
    this.bodies = bodies;
    this.weightSync = weightSync;
    this.closing = closing;
  }

  void completions(HttpExchange ex) throws IOException {
    handle(ex, false);
  }

  void chat(HttpExchange ex) throws IOException {
    handle(ex, true);
  }

  private void handle(HttpExchange ex, boolean chat) throws IOException {
    String contentType = ex.getRequestHeaders().getFirst("Content-Type");
    if (contentType == null || !contentType.toLowerCase(java.util.Locale.ROOT).startsWith("application/json")) {
      // vLLM's validate_json_request
      throw ApiError.badRequest("Unsupported Media Type: Only 'application/json' is allowed");
    }
    var body = RequestParser.object(ex.getRequestBody().readAllBytes());
    CompletionRequest request = chat ? parser.chat(body) : parser.completion(body);
    String model = models.resolve(request.model());
    Headers h = ex.getRequestHeaders();
    // the engine's requests are named by X-Request-Id; the response's id is it behind the object's prefix, as vLLM
    String given = h.getFirst("X-Request-Id");
    String prefix = chat ? "chatcmpl-" : "cmpl-";
    String requestId = given == null || given.isBlank() ? prefix + UUID.randomUUID().toString().replace("-", "")
        : given;
    String id = given == null || given.isBlank() ? requestId : prefix + given;
    TraceCarrier carrier = TraceCarrier.of(h.getFirst("traceparent"), h.getFirst("tracestate"),
        h.getFirst("baggage"));
    long created = System.currentTimeMillis() / 1000;
    List<CompletableFuture<GenerationResult>> futures = weightSync.admit(
        () -> generations.submit(requestId, request, carrier));
    if (request.stream()) {
      stream(ex, request, id, created, model, futures);
    } else {
      List<GenerationResult> results = new ArrayList<>(futures.size());
      for (CompletableFuture<GenerationResult> f : futures) {
        results.add(checked(await(f)));
      }
      ArrayNode choices = Responses.JSON.createArrayNode();
      for (int i = 0; i < results.size(); i++) {
        choices.add(chat ? bodies.chatChoice(i, results.get(i), request, false)
            : bodies.completionChoice(i, results.get(i), request));
      }
      Responses.json(ex, 200, bodies.envelope(id, chat ? "chat.completion" : "text_completion", created, model,
          choices, bodies.usage(request, results)));
    }
  }

  private void stream(HttpExchange ex, CompletionRequest request, String id, long created, String model,
      List<CompletableFuture<GenerationResult>> futures) throws IOException {
    BlockingQueue<Integer> finished = new LinkedBlockingQueue<>();
    for (int i = 0; i < futures.size(); i++) {
      int index = i;
      futures.get(i).whenComplete((r, t) -> finished.add(index));
    }
    String object = request.chat() ? "chat.completion.chunk" : "text_completion";
    try (EventStream events = EventStream.open(ex)) {
      for (int k = 0; k < futures.size(); k++) {
        int index = take(finished);
        GenerationResult r;
        try {
          r = checked(await(futures.get(index)));
        } catch (ApiError e) {
          events.data(Responses.errorBody(e));
          events.done();
          return;
        }
        ArrayNode choices = Responses.JSON.createArrayNode();
        choices.add(request.chat() ? bodies.chatChoice(index, r, request, true)
            : bodies.completionChoice(index, r, request));
        events.data(bodies.envelope(id, object, created, model, choices, null));
      }
      events.done();
    }
  }

  private GenerationResult checked(GenerationResult r) {
    if (r.finishReason() == FinishReason.ERROR) {
      throw ApiError.internal("generation of " + r.requestId() + " failed: " + r.error());
    }
    if (r.finishReason() == FinishReason.ABORT && closing.getAsBoolean()) {
      throw ApiError.unavailable("generation of " + r.requestId() + " was aborted: the server is shutting down");
    }
    return r;
  }

  private static GenerationResult await(CompletableFuture<GenerationResult> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw ApiError.unavailable("interrupted while waiting for the engine: the server is shutting down");
    } catch (ExecutionException e) {
      throw ApiError.internal("engine failure: " + e.getCause());
    }
  }

  private static int take(BlockingQueue<Integer> q) {
    try {
      return q.take();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw ApiError.unavailable("interrupted while waiting for the engine: the server is shutting down");
    }
  }
}
