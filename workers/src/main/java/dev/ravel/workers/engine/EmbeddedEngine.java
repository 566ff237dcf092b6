package dev.ravel.workers.engine;

import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.model.LanguageModel;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 */
public final class EmbeddedEngine implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedEngine.class);
  private static final long JOIN_TIMEOUT_MS = 10_000;
  private static final AtomicInteger THREAD_IDS = new AtomicInteger();

  private final EngineConfig config;
  private final int budget;
  private final int eos;
  private final Tracer tracer;
  private final EngineMetrics metrics;
  private final RequestSampler sampler;
  private final long baseEpochNanos;
  private final long baseNanoTime;
  private final Thread scheduler;

  // submit side, guarded by lock
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();
  private final ArrayDeque<Sequence> inbox = new ArrayDeque<>();
  private boolean closed;
  private String failure;

  private volatile LanguageModel latestModel;

  // scheduler thread only
  private LanguageModel model;
  private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
  private final List<Sequence> running = new ArrayList<>();
  private final TokenSampler tokenSampler = new TokenSampler();
  private int kvUsed;

  // published by the scheduler for snapshots and gauges
  private volatile int publishedRunning;
  private volatile int publishedWaiting;
  private volatile int publishedKvUsed;
  private volatile int peakRunning;

  private final AtomicLongArray finished = new AtomicLongArray(FinishReason.values().length);
  private final AtomicLong preemptions = new AtomicLong();
  private final AtomicLong promptTokens = new AtomicLong();
  private final AtomicLong generationTokens = new AtomicLong();
  private final AtomicLong spansKept = new AtomicLong();
  private final AtomicLong spansSampledOut = new AtomicLong();

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
    this.budget = config.kvTokenBudget();
    this.eos = config.eosToken();
    this.model = model;
    this.latestModel = model;
    this.tracer = otel.getTracer(EngineNames.INSTRUMENTATION_SCOPE);
    this.sampler = new RequestSampler(config.tracing(), config.sampleRatio(), config.slowRequest().toNanos());
    Instant now = Instant.now();
    this.baseNanoTime = System.nanoTime();
    this.baseEpochNanos = now.getEpochSecond() * 1_000_000_000L + now.getNano();
    this.metrics = new EngineMetrics(otel.getMeter(EngineNames.INSTRUMENTATION_SCOPE), config.modelName(),
        () -> publishedRunning, this::waitingNow, () -> publishedKvUsed / (double) budget);
    this.scheduler = new Thread(this::schedulerLoop,
        "ravel-engine-" + config.modelName() + "-" + THREAD_IDS.incrementAndGet());
    scheduler.setDaemon(true);
    scheduler.start();
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
    Sequence s = new Sequence(request, nowEpochNanos());
    enqueue(List.of(s));
    return s.future;
  }

  /** Queues all of {@code batch} at once (the scheduler sees all or none of it), or refuses all. */
  private void enqueue(List<Sequence> batch) {
    String refusal;
    lock.lock();
    try {
      if (!closed) {
        inbox.addAll(batch);
        wake.signal();
        return;
      }
      refusal = failure;
    } finally {
      lock.unlock();
    }
    for (Sequence s : batch) {
      finish(s, refusal == null ? FinishReason.ABORT : FinishReason.ERROR, refusal);
    }
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
    long arrival = nowEpochNanos();
    for (GenerationRequest r : requests) {
      if (r == null) {
        throw new IllegalArgumentException("requests: element " + batch.size() + " is null");
      }
      Sequence s = new Sequence(r, arrival);
      batch.add(s);
      futures.add(s.future);
    }
    enqueue(batch);
    List<GenerationResult> results = new ArrayList<>(futures.size());
    for (CompletableFuture<GenerationResult> f : futures) {
      try {
        results.add(f.get());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CancellationException("interrupted while waiting for " + futures.size() + " generation results");
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
    latestModel = next;
  }

  /** The engine's counters and current load. */
  public EngineStats snapshot() {
    long[] f = new long[finished.length()];
    for (int i = 0; i < f.length; i++) {
      f[i] = finished.get(i);
    }
    return new EngineStats(f, preemptions.get(), publishedRunning, waitingNow(), publishedKvUsed, budget,
        promptTokens.get(), generationTokens.get(), spansKept.get(), spansSampledOut.get());
  }

  /**
   * Stops the engine: waiting and running requests complete with {@link FinishReason#ABORT} (after the
   * scheduler iteration in progress), later submissions too, and the scheduler thread ends (waited for up
   * to 10 s). Idempotent.
   */
  @Override
  public void close() {
    lock.lock();
    try {
      closed = true;
      wake.signalAll();
    } finally {
      lock.unlock();
    }
    if (Thread.currentThread() != scheduler) {
      try {
        scheduler.join(JOIN_TIMEOUT_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (scheduler.isAlive()) {
        LOG.warn("engine scheduler {} still busy {} ms after close(); its requests abort when it returns",
            scheduler.getName(), JOIN_TIMEOUT_MS);
      }
    }
    metrics.close();
  }

  /** The most requests that were ever in the running batch at once. */
  int peakRunning() {
    return peakRunning;
  }

  /** Whether the scheduler thread is alive. */
  boolean schedulerAlive() {
    return scheduler.isAlive();
  }

  // ---------------------------------------------------------------- scheduler

  private void schedulerLoop() {
    String crash = null;
    try {
      List<Sequence> arrivals = new ArrayList<>();
      while (true) {
        lock.lock();
        try {
          while (!closed && inbox.isEmpty() && waiting.isEmpty() && running.isEmpty()) {
            wake.await();
          }
          if (closed) {
            break;
          }
          arrivals.addAll(inbox);
          inbox.clear();
          publishedWaiting = waiting.size() + arrivals.size();
        } finally {
          lock.unlock();
        }
        applyModelUpdate();
        for (Sequence s : arrivals) {
          intake(s);
        }
        arrivals.clear();
        admit();
        if (!running.isEmpty()) {
          decode();
        }
        publish();
      }
    } catch (InterruptedException e) {
      LOG.debug("engine scheduler {} interrupted; aborting its requests", scheduler.getName());
    } catch (RuntimeException | Error e) {
      LOG.error("engine scheduler {} failed; failing its requests", scheduler.getName(), e);
      crash = "engine failed: " + e;
    } finally {
      shutdown(crash);
    }
  }

  private void shutdown(String crash) {
    List<Sequence> left = new ArrayList<>(running);
    left.addAll(waiting);
    lock.lock();
    try {
      closed = true;
      failure = crash;
      left.addAll(inbox);
      inbox.clear();
    } finally {
      lock.unlock();
    }
    running.clear();
    waiting.clear();
    for (Sequence s : left) {
      release(s);
      finish(s, crash == null ? FinishReason.ABORT : FinishReason.ERROR, crash);
    }
    publish();
  }

  private void publish() {
    publishedRunning = running.size();
    publishedWaiting = waiting.size();
    publishedKvUsed = kvUsed;
    if (running.size() > peakRunning) {
      peakRunning = running.size();
    }
  }

  private int waitingNow() {
    lock.lock();
    try {
      return publishedWaiting + inbox.size();
    } finally {
      lock.unlock();
    }
  }

  /** Rejects what can never run; queues the rest. */
  private void intake(Sequence s) {
    int vocab = model.vocabSize();
    int[] prompt = s.request.promptRef();
    for (int i = 0; i < prompt.length; i++) {
      if (prompt[i] >= vocab) {
        finish(s, FinishReason.ERROR, "promptTokens: token " + prompt[i] + " at index " + i
            + " is outside the model's vocabulary of " + vocab + " tokens");
        return;
      }
    }
    if (s.promptLength + 1 > budget) {
      finish(s, FinishReason.ERROR, promptTooLarge(s));
      return;
    }
    waiting.addLast(s);
  }

  private String promptTooLarge(Sequence s) {
    return "prompt of " + s.promptLength + " tokens does not fit the KV token budget of " + budget
        + " tokens (a request needs its prompt plus 1 token, " + (s.promptLength + 1) + ")";
  }

  private void applyModelUpdate() {
    LanguageModel next = latestModel;
    if (next == model) {
      return;
    }
    model = next;
    long now = nowEpochNanos();
    for (Iterator<Sequence> it = running.iterator(); it.hasNext(); ) {
      Sequence s = it.next();
      int before = s.held;
      try {
        prefill(s);
        kvUsed += s.held - before;
        s.addEvent(EngineNames.EVENT_WEIGHT_UPDATE, now, Attributes.of(EngineNames.WEIGHT_VERSION, model.version()));
      } catch (RuntimeException e) {
        it.remove();
        s.held = before;
        release(s);
        finish(s, FinishReason.ERROR, "model failed recomputing after a weight update: " + e);
      }
    }
  }

  private void admit() {
    while (!waiting.isEmpty() && running.size() < config.maxRunningRequests()) {
      Sequence s = waiting.peekFirst();
      int need = s.length() + 1;
      if (need > budget) {
        waiting.pollFirst();
        if (s.generated() == 0) {
          finish(s, FinishReason.ERROR, promptTooLarge(s));
        } else {
          finish(s, FinishReason.LENGTH, null);
        }
        continue;
      }
      // room for this request and its next token, beside one more token for each running request
      if (kvUsed + running.size() + need > budget) {
        break;
      }
      waiting.pollFirst();
      if (s.scheduled == 0) {
        s.scheduled = nowEpochNanos();
      }
      try {
        prefill(s);
      } catch (RuntimeException e) {
        s.cache = null;
        s.held = 0;
        finish(s, FinishReason.ERROR, "model failed in prefill: " + e);
        continue;
      }
      running.add(s);
      kvUsed += s.held;
    }
    if (running.size() > peakRunning) {
      peakRunning = running.size();
    }
  }

  /** A fresh cache over all of the sequence's tokens, and the logits of its next token. */
  private void prefill(Sequence s) {
    int vocab = model.vocabSize();
    if (s.logits == null || s.logits.length != vocab) {
      s.logits = new float[vocab];
    }
    s.cache = model.newCache();
    s.held = 0;
    model.forward(s.cache, s.tokens(), 0, s.length(), s.logits);
    s.held = s.length();
    s.logitsVersion = model.version();
  }

  private void decode() {
    // sample one token for every running request
    for (Iterator<Sequence> it = running.iterator(); it.hasNext(); ) {
      Sequence s = it.next();
      SamplingParams p = s.request.params();
      int token;
      float logprob;
      try {
        token = tokenSampler.sample(s.logits, p.temperature(), p.topP(), TokenSampler.uniform(p.seed(), s.generated()));
        logprob = TokenSampler.logprob(s.logits, token, p.temperature());
      } catch (RuntimeException e) {
        it.remove();
        release(s);
        finish(s, FinishReason.ERROR, "sampling failed: " + e.getMessage());
        continue;
      }
      long now = nowEpochNanos();
      s.append(token, logprob);
      s.lastTokenVersion = s.logitsVersion;
      s.lastToken = now;
      if (s.firstToken == 0) {
        s.firstToken = now;
      }
      FinishReason done = token == eos ? FinishReason.STOP
          : s.generated() >= p.maxTokens() ? FinishReason.LENGTH : null;
      if (done != null) {
        it.remove();
        release(s);
        finish(s, done, null);
      }
    }
    // feed each sampled token; preempt the most recently admitted requests when the budget is full
    for (int i = 0; i < running.size(); i++) {
      Sequence s = running.get(i);
      if (s.held + 1 > budget) {
        // even alone it could not grow: it has reached the engine's capacity
        running.remove(i--);
        release(s);
        finish(s, FinishReason.LENGTH, null);
        continue;
      }
      boolean evictedSelf = false;
      while (kvUsed + 1 > budget) {
        Sequence victim = running.remove(running.size() - 1);
        preempt(victim);
        if (victim == s) {
          evictedSelf = true;
          break;
        }
      }
      if (evictedSelf) {
        break;
      }
      try {
        model.forward(s.cache, s.tokens(), s.length() - 1, s.length(), s.logits);
      } catch (RuntimeException e) {
        running.remove(i--);
        release(s);
        finish(s, FinishReason.ERROR, "model failed in decode: " + e);
        continue;
      }
      s.held++;
      kvUsed++;
      s.logitsVersion = model.version();
    }
  }

  private void preempt(Sequence s) {
    release(s);
    s.preemptions++;
    s.addEvent(EngineNames.EVENT_PREEMPTED, nowEpochNanos(),
        Attributes.of(EngineNames.USAGE_COMPLETION_TOKENS, (long) s.generated()));
    preemptions.incrementAndGet();
    try {
      metrics.recordPreemption();
    } catch (RuntimeException e) {
      // telemetry must never break generation
    }
    waiting.addFirst(s);
  }

  private void release(Sequence s) {
    kvUsed -= s.held;
    s.held = 0;
    s.cache = null;
  }

  // ---------------------------------------------------------------- finishing: result, span, metrics

  /** Completes the request's future (always: exceptionally only if building its result itself fails). */
  private void finish(Sequence s, FinishReason reason, String error) {
    if (s.finished) {
      return;
    }
    s.finished = true;
    try {
      complete(s, reason, error);
    } catch (RuntimeException e) {
      LOG.error("could not build the result of {}", s.request.requestId(), e);
      s.future.completeExceptionally(e);
    }
  }

  private void complete(Sequence s, FinishReason reason, String error) {
    long now = nowEpochNanos();
    int completion = s.generated();
    boolean hasToken = s.firstToken != 0;
    RequestStats stats = RequestStats.builder()
        .arrivalEpochNanos(s.arrival)
        .scheduledEpochNanos(s.scheduled)
        .firstTokenEpochNanos(s.firstToken)
        .finishEpochNanos(now)
        .prefillNanos(hasToken ? s.firstToken - s.scheduled : 0)
        .decodeNanos(hasToken ? s.lastToken - s.firstToken : 0)
        .preemptions(s.preemptions)
        .promptTokens(s.promptLength)
        .completionTokens(completion)
        .build();
    boolean traced = false;
    String keep = sampler.keepReason(s.request.requestId(), reason == FinishReason.ERROR, s.preemptions,
        now - s.arrival);
    if (keep != null) {
      try {
        traced = emitSpan(s, stats, reason, error, keep);
      } catch (RuntimeException e) {
        LOG.warn("could not record the llm_request span of {}", s.request.requestId(), e);
      }
    } else if (sampler.tracing()) {
      spansSampledOut.incrementAndGet();
    }
    if (traced) {
      spansKept.incrementAndGet();
    }
    try {
      metrics.recordFinished(stats, reason, s.lastToken);
    } catch (RuntimeException e) {
      LOG.warn("could not record the metrics of {}", s.request.requestId(), e);
    }
    finished.incrementAndGet(reason.ordinal());
    promptTokens.addAndGet(s.promptLength);
    generationTokens.addAndGet(completion);
    s.future.complete(GenerationResult.builder()
        .requestId(s.request.requestId())
        .promptTokens(s.request.promptRef())
        .completionTokens(s.completion())
        .logprobs(s.completionLogprobs())
        .finishReason(reason)
        .weightVersion(s.lastTokenVersion)
        .stats(stats)
        .traced(traced)
        .error(reason == FinishReason.ERROR ? error : null)
        .build());
  }

  /** Records the request's {@code llm_request} span; whether the SDK kept it. */
  private boolean emitSpan(Sequence s, RequestStats stats, FinishReason reason, String error, String keep) {
    SamplingParams p = s.request.params();
    Attributes attributes = Attributes.builder()
        .put(EngineNames.REQUEST_ID, s.request.requestId())
        .put(EngineNames.REQUEST_N, 1L)
        .put(EngineNames.REQUEST_MAX_TOKENS, (long) p.maxTokens())
        .put(EngineNames.REQUEST_TEMPERATURE, p.temperature())
        .put(EngineNames.REQUEST_TOP_P, p.topP())
        .put(EngineNames.REQUEST_MODEL, config.modelName())
        .put(EngineNames.RESPONSE_MODEL, config.modelName())
        .put(EngineNames.OPERATION_NAME, EngineNames.OPERATION_TEXT_COMPLETION)
        .put(EngineNames.USAGE_PROMPT_TOKENS, (long) stats.promptTokens())
        .put(EngineNames.USAGE_COMPLETION_TOKENS, (long) stats.completionTokens())
        .put(EngineNames.RESPONSE_FINISH_REASONS, "[\"" + reason.wireName() + "\"]")
        .put(EngineNames.LATENCY_TIME_IN_QUEUE, stats.timeInQueue())
        .put(EngineNames.LATENCY_TIME_TO_FIRST_TOKEN, stats.timeToFirstToken())
        .put(EngineNames.LATENCY_E2E, stats.e2e())
        .put(EngineNames.LATENCY_TIME_IN_MODEL_PREFILL, stats.prefill())
        .put(EngineNames.LATENCY_TIME_IN_MODEL_DECODE, stats.decode())
        .put(EngineNames.LATENCY_TIME_IN_MODEL_INFERENCE, stats.inference())
        .put(EngineNames.ENGINE_PREEMPTIONS, (long) s.preemptions)
        .put(EngineNames.ENGINE_KEEP_REASON, keep)
        .put(EngineNames.WEIGHT_VERSION, s.lastTokenVersion)
        .build();
    Span span = tracer.spanBuilder(SpanNames.LLM_REQUEST)
        .setParent(s.request.carrier().extract())
        .setSpanKind(SpanKind.SERVER)
        .setStartTimestamp(stats.arrivalEpochNanos(), TimeUnit.NANOSECONDS)
        .setAllAttributes(attributes)
        .startSpan();
    if (s.events != null) {
      for (Sequence.Event e : s.events) {
        span.addEvent(e.name(), e.attributes(), e.epochNanos(), TimeUnit.NANOSECONDS);
      }
    }
    if (reason == FinishReason.ERROR) {
      span.setStatus(StatusCode.ERROR, error);
    }
    span.end(stats.finishEpochNanos(), TimeUnit.NANOSECONDS);
    return span.getSpanContext().isSampled();
  }

  private long nowEpochNanos() {
    return baseEpochNanos + (System.nanoTime() - baseNanoTime);
  }
}
