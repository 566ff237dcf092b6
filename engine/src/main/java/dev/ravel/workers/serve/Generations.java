package dev.ravel.workers.serve;

import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Submits the choices of one HTTP request to the engine together: choice {@code i} is engine request
 * {@code <requestId>-<i>} (just {@code <requestId>} when there is one choice) with seed {@code seed + i}
 * under the caller's trace context. Each result is
 * counted in the metrics before its future completes, so a response is never ahead of {@code /metrics}.
 */
final class Generations {
  private static final Logger LOG = LoggerFactory.getLogger(Generations.class);

  private final EmbeddedEngine engine;
  private final ServeMetrics metrics;

  Generations(EmbeddedEngine engine, ServeMetrics metrics) {
    this.engine = engine;
    this.metrics = metrics;
  }

  /** One future per choice, in choice order. */
  List<CompletableFuture<GenerationResult>> submit(String requestId, CompletionRequest request,
      TraceCarrier carrier) {
    long seed = request.seed() != null ? request.seed() : ThreadLocalRandom.current().nextLong();
    int choices = request.choices();
    for (int p = 0; p < request.prompts().size(); p++) {
      metrics.recordParamsN(request.n());
    }
    List<GenerationRequest> requests = new ArrayList<>(choices);
    for (int i = 0; i < choices; i++) {
      requests.add(GenerationRequest.of(choices == 1 ? requestId : requestId + "-" + i, request.promptOf(i),
          request.sampling().withSeed(seed + i), carrier));
    }
    List<CompletableFuture<GenerationResult>> futures = new ArrayList<>(choices);
    for (GenerationRequest r : requests) {
      futures.add(engine.submit(r).thenApply(this::counted));
    }
    return futures;
  }

  private GenerationResult counted(GenerationResult r) {
    try {
      metrics.record(r);
    } catch (RuntimeException e) {
      LOG.warn("could not count {} in the metrics: {}", r.requestId(), e.toString());
    }
    return r;
  }
}
