package dev.ravel.workers.engine;

import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.workers.model.LanguageModel;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Tracer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.LongSupplier;

/**
 * A continuous-batching inference engine over a {@link LanguageModel}, in the manner of vLLM: a FIFO
 * waiting queue and a running batch that share a KV token budget.
 *
 * <p>One scheduler thread (a daemon) runs while there is work and sleeps on a condition otherwise. Each
 * iteration (1) admits waiting requests in order while fewer than {@code maxRunningRequests} run and the
 * request's tokens plus one fit beside what the running batch holds and will grow by in this iteration;
 * admission prefills the request's cache over its prompt (and, after a preemption, its generated tokens);
 * (2) decodes one token for every running request: samples it from the request's next-token logits
 * (temperature, top-p, randomness from the request's seed indexed by position), finishes the request on
 * the EOS token ({@link FinishReason#STOP}) or at {@code maxTokens} ({@link FinishReason#LENGTH}), and
 * otherwise feeds the token to the model. When a feed finds the budget full, the most recently admitted
 * requests are preempted by recompute: their caches are dropped, they return to the front of the waiting
 * queue, and they are prefilled again on re-admission. Sampling depends only on the logits and the
 * position, so a preempted request yields exactly the tokens it would have without preemption.
 *
 * <p>Each finished request gets an {@code llm_request} span (kind SERVER, vLLM's attribute names, child of
 * the request's carrier context, from arrival to finish) when tracing is on and the engine's sampler keeps
 * it: errored, preempted and slow requests always, the others by a hash of the request id. Metrics (GenAI
 * token and latency histograms, queue time, preemptions, finished requests, running/waiting/KV gauges) are
 * recorded for every request.
 *
 * <p>{@link #submit}, {@link #generate}, {@link #updateModel}, {@link #snapshot} and {@link #close} are safe
 * to call from any thread.
 *
 * <p>This class is the facade over three package-private parts: {@code BatchScheduler} (queue, batch,
 * budget, prefill, decode, preemption), {@code RequestTelemetry} (span, metrics, counters and result of
 * each finished request) and {@code EngineLoop} (the scheduler thread and the inbox that feeds it).
 */
public final class EmbeddedEngine implements AutoCloseable {
  private final EngineConfig config;
  private final LongSupplier clock;
  private final EngineMetrics metrics;
  private final RequestTelemetry telemetry;
  private final BatchScheduler scheduler;
  private final EngineLoop loop;

  /**
   * Starts the engine's scheduler thread.
   *
   * @throws IllegalArgumentException when an argument is missing or the EOS token lies outside the
   *     model's vocabulary
   */
  public EmbeddedEngine(EngineConfig config, LanguageModel model, OpenTelemetry otel) {
    if (config == null) {
      throw new IllegalArgumentException("config: required");
    }
    if (model == null) {
      throw new IllegalArgumentException("model: required");
    }
    if (otel == null) {
      throw new IllegalArgumentException("otel: required (OpenTelemetry.noop() for none)");
    }
    checkVocabulary(config, model);
    this.config = config;
    Tracer tracer = otel.getTracer(EngineNames.INSTRUMENTATION_SCOPE);
    Instant now = Instant.now();
    long baseNanoTime = System.nanoTime();
    long baseEpochNanos = now.getEpochSecond() * 1_000_000_000L + now.getNano();
    this.clock = () -> baseEpochNanos + (System.nanoTime() - baseNanoTime);
    this.metrics = new EngineMetrics(otel.getMeter(EngineNames.INSTRUMENTATION_SCOPE), config.modelName());
    this.telemetry = new RequestTelemetry(config, tracer, metrics, clock);
    this.scheduler = new BatchScheduler(config, model, telemetry, clock);
    this.loop = new EngineLoop(config.modelName(), scheduler, telemetry);
    int budget = config.kvTokenBudget();
    metrics.registerGauges(scheduler::publishedRunning, loop::waitingNow,
        () -> scheduler.publishedKvUsed() / (double) budget);
    loop.start();
  }

  private static void checkVocabulary(EngineConfig config, LanguageModel model) {
    if (config.eosToken() >= model.vocabSize()) {
      throw new IllegalArgumentException("eosToken: " + config.eosToken() + " is outside the model's vocabulary of "
          + model.vocabSize() + " tokens");
    }
  }

  public EngineConfig config() {
    return config;
  }

  /**
   * Queues {@code request}. The future completes normally (exceptionally only on an engine bug): with an
   * {@link FinishReason#ABORT} result if the engine is closed (or closes before the request finishes), and
   * with an {@link FinishReason#ERROR} one if the request cannot be served (its prompt does not fit the KV
   * budget, a token is outside the vocabulary, the model failed on it).
   */
  public CompletableFuture<GenerationResult> submit(GenerationRequest request) {
    if (request == null) {
      throw new IllegalArgumentException("request: required");
    }
    Sequence s = new Sequence(request, clock.getAsLong());
    loop.enqueue(List.of(s));
    return s.future;
  }

  /**
   * Submits every request, waits for all, and returns their results in the order of {@code requests}. The
   * requests are queued together, so an idle engine schedules them as one batch.
   *
   * @throws CancellationException when the calling thread is interrupted while waiting (its interrupt flag
   *     is set again)
   */
  public List<GenerationResult> generate(List<GenerationRequest> requests) {
    List<Sequence> batch = new ArrayList<>(requests.size());
    List<CompletableFuture<GenerationResult>> futures = new ArrayList<>(requests.size());
    long arrival = clock.getAsLong();
    for (GenerationRequest r : requests) {
      if (r == null) {
        throw new IllegalArgumentException("requests: element " + batch.size() + " is null");
      }
      Sequence s = new Sequence(r, arrival);
      batch.add(s);
      futures.add(s.future);
    }
    loop.enqueue(batch);
    List<GenerationResult> results = new ArrayList<>(futures.size());
    for (CompletableFuture<GenerationResult> f : futures) {
      try {
        results.add(f.get());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CancellationException("interrupted while waiting for " + futures.size() + " generation results ("
            + requests.get(0).requestId() + (requests.size() > 1 ? " and " + (requests.size() - 1) + " more" : "")
            + ")");
      } catch (ExecutionException e) {
        throw new IllegalStateException("engine request failed", e.getCause());
      }
    }
    return results;
  }

  /**
   * Serves later scheduler steps with {@code next}. Requests already running keep their tokens; their
   * caches are recomputed with the new weights before their next token, so every token after the switch
   * comes from {@code next}. A result records the version that produced its last token.
   *
   * @throws IllegalArgumentException when {@code next} is missing or the EOS token lies outside its vocabulary
   */
  public void updateModel(LanguageModel next) {
    if (next == null) {
      throw new IllegalArgumentException("model: required");
    }
    checkVocabulary(config, next);
    scheduler.updateModel(next);
    loop.modelOffered();
  }

  /** How long {@link #updateModelAndWait} waits for the scheduler to switch. */
  static final long SWITCH_TIMEOUT_MS = 60_000L;

  /**
   * Offers {@code next} and returns once the scheduler steps with it (after the iteration in progress, or at
   * once when idle): the version the engine itself reports serving, not the one the caller asked for.
   *
   * @throws IllegalStateException when the engine does not switch within a minute, or has stopped
   */
  public long updateModelAndWait(LanguageModel next) {
    updateModel(next);
    try {
      return scheduler.awaitServed(next.version(), SWITCH_TIMEOUT_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the engine switched to version " + next.version(), e);
    }
  }

  /**
   * Holds generation still after the scheduler iteration in progress (vLLM's {@code pause?mode=keep}): running
   * requests keep their tokens and later arrivals queue; a model offered meanwhile is switched to when
   * {@link #resume()} lets the engine go on, so their later tokens come from it. Returns once no iteration runs.
   */
  public void pause() {
    try {
      loop.pause();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while pausing the engine", e);
    }
  }

  /** Lets a paused engine generate again (no effect on one that is not paused). */
  public void resume() {
    loop.resume();
  }

  /** Whether {@link #pause()} holds the engine still. */
  public boolean isPaused() {
    return loop.paused();
  }

  /**
   * Ends every request the engine holds (running, waiting, queued) with {@link FinishReason#ABORT} after the
   * iteration in progress (vLLM's {@code pause?mode=abort}); returns once they are finished.
   */
  public void abortAll() {
    try {
      loop.abortAll();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while aborting the engine's requests", e);
    }
  }

  /**
   * Waits until the engine holds no request (vLLM's {@code pause?mode=wait} drain), at most {@code millis}.
   *
   * @return false when requests remain after {@code millis}
   */
  public boolean awaitIdle(long millis) {
    try {
      return loop.awaitIdle(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the engine to drain", e);
    }
  }

  /** The version of the weights the engine generates with now. */
  public long servedVersion() {
    return scheduler.servedVersion();
  }

  /** The engine's counters and current load. */
  public EngineStats snapshot() {
    long[] queue = telemetry.queue();
    return new EngineStats(telemetry.finishedCounts(), telemetry.preemptions(), scheduler.publishedRunning(),
        loop.waitingNow(), scheduler.publishedKvUsed(), config.kvTokenBudget(), telemetry.promptTokens(),
        telemetry.generationTokens(), telemetry.spansKept(), telemetry.spansSampledOut(), queue[0], queue[1],
        scheduler.load());
  }

  /**
   * Stops the engine: waiting and running requests complete with {@link FinishReason#ABORT} (after the
   * scheduler iteration in progress), later submissions too, and the scheduler thread ends (waited for up
   * to 10 s). Idempotent.
   */
  @Override
  public void close() {
    loop.close();
    metrics.close();
  }

  /** The most requests that were ever in the running batch at once. */
  int peakRunning() {
    return scheduler.peakRunning();
  }

  /** Whether the scheduler thread is alive. */
  boolean schedulerAlive() {
    return loop.isAlive();
  }
}
