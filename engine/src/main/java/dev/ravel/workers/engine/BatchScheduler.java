package dev.ravel.workers.engine;

import dev.ravel.workers.model.LanguageModel;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The engine's continuous-batching scheduler, in the manner of vLLM: a FIFO waiting queue and a running
 * batch that share a KV token budget.
 *
 * <p>Each {@link #step} (1) switches to the latest model offered by {@link #updateModel}, recomputing the
 * running requests' caches; (2) queues the arrivals, finishing with an error those that can never run
 * (a token outside the vocabulary, a prompt that with one more token exceeds the budget); (3) admits
 * waiting requests in order while fewer than {@code maxRunningRequests} run and the request's tokens plus
 * one fit beside what the running batch holds and will grow by in this step; admission prefills the
 * request's cache over its prompt (and, after a preemption, its generated tokens); (4) decodes one token
 * for every running request: samples it from the request's next-token logits (temperature, top-p,
 * randomness from the request's seed indexed by position), finishes the request on the EOS token
 * ({@link FinishReason#STOP}) or at {@code maxTokens} ({@link FinishReason#LENGTH}), and otherwise feeds
 * the token to the model. When a feed finds the budget full, the most recently admitted requests are
 * preempted by recompute: their caches are dropped, they return to the front of the waiting queue, and
 * they are prefilled again on re-admission. Sampling depends only on the logits and the position, so a
 * preempted request yields exactly the tokens it would have without preemption.
 *
 * <p>A {@link RuntimeException} from the model fails only the request it was serving ({@link
 * FinishReason#ERROR}); an {@link Error} propagates out of {@link #step} (the engine's loop dies of it)
 * with that request still running or waiting, so that {@link #drain} returns it.
 *
 * <p>Finished requests, preemptions and weight updates are handed to {@link RequestTelemetry}; each request's
 * admissions, first token after each, evictions and weight updates are recorded in its {@link RequestPhases}
 * at the instant the scheduler read for them. One thread
 * owns the scheduler (the engine's scheduler thread); only {@link #updateModel} and the published getters
 * may be called from other threads.
 */
final class BatchScheduler {
  private final int budget;
  private final int eos;
  private final int maxRunning;
  private final RequestTelemetry telemetry;
  private final LongSupplier clock;
  private final TokenSampler tokenSampler = new TokenSampler();

  private volatile LanguageModel latestModel;
  /** The version of the model the scheduler steps with, guarded by itself for {@link #awaitServed}. */
  private final Object servedLock = new Object();
  private long servedVersion;

  // scheduler thread only
  private LanguageModel model;
  private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
  private final List<Sequence> running = new ArrayList<>();
  private int kvUsed;

  // published for snapshots and gauges
  private volatile int publishedRunning;
  private volatile int publishedWaiting;
  private volatile int publishedKvUsed;
  private volatile int peakRunning;
  // the published counts integrated over time since the scheduler started (guarded by loadLock)
  private final Object loadLock = new Object();
  private final long loadSince;
  private long loadAt;
  private double runningSeconds;
  private double waitingSeconds;
  private double kvTokenSeconds;
  private int inInbox;

  /** A scheduler serving {@code model}; {@code clock} gives epoch nanoseconds. */
  BatchScheduler(EngineConfig config, LanguageModel model, RequestTelemetry telemetry, LongSupplier clock) {
    this.budget = config.kvTokenBudget();
    this.eos = config.eosToken();
    this.maxRunning = config.maxRunningRequests();
    this.model = model;
    this.latestModel = model;
    this.servedVersion = model.version();
    this.telemetry = telemetry;
    this.clock = clock;
    this.loadSince = clock.getAsLong();
    this.loadAt = loadSince;
  }

  /** Serves the next steps with {@code next} (any thread; the caller has checked its vocabulary). */
  void updateModel(LanguageModel next) {
    latestModel = next;
  }

  /** Whether a model offered by {@link #updateModel} is not yet the one the scheduler steps with. */
  boolean updatePending() {
    return latestModel != model;
  }

  /** The version of the model the scheduler steps with (any thread). */
  long servedVersion() {
    synchronized (servedLock) {
      return servedVersion;
    }
  }

  /**
   * Waits until the scheduler steps with version {@code version} or a newer one; returns the version served.
   *
   * @throws IllegalStateException when it does not within {@code timeoutMs}
   */
  long awaitServed(long version, long timeoutMs) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    synchronized (servedLock) {
      while (servedVersion < version) {
        long left = (deadline - System.nanoTime()) / 1_000_000L;
        if (left <= 0) {
          throw new IllegalStateException("the engine did not switch to weight version " + version + " within "
              + timeoutMs + " ms (it serves " + servedVersion + ")");
        }
        servedLock.wait(left);
      }
      return servedVersion;
    }
  }

  /** Whether nothing waits or runs. */
  boolean idle() {
    return waiting.isEmpty() && running.isEmpty();
  }

  /** Publishes the waiting count as the queue plus {@code arriving} requests about to be queued. */
  void publishWaiting(int arriving) {
    long now = clock.getAsLong();
    synchronized (loadLock) {
      accrue(now);
      publishedWaiting = waiting.size() + arriving;
    }
  }

  /**
   * One scheduler iteration over {@code arrivals} (in order) and the queued and running requests. The requests
   * that end in it are finished (their results completed) after the counts are published, so a caller that has
   * its results never sees them as still running; also when the step fails.
   */
  void step(List<Sequence> arrivals) {
    try {
      applyModelUpdate();
      for (Sequence s : arrivals) {
        intake(s);
      }
      admit();
      publish(); // the batch the model steps with: the load integrals count it over the forward pass
      if (!running.isEmpty()) {
        decode();
      }
    } finally {
      publish();
      finishPending();
    }
  }

  /** A request that ended in this step: out of the running batch and the queue, finished when the step ends. */
  private record Ended(Sequence sequence, FinishReason reason, String error) {}

  private final List<Ended> ended = new ArrayList<>();

  private void finishAfterStep(Sequence s, FinishReason reason, String error) {
    ended.add(new Ended(s, reason, error));
  }

  private void finishPending() {
    for (Ended e : ended) {
      telemetry.finish(e.sequence(), e.reason(), e.error());
    }
    ended.clear();
  }

  /**
   * Empties the scheduler: releases the KV of every request and returns them, running ones first, then
   * waiting ones in queue order. The caller finishes them, then calls {@link #publish}.
   */
  List<Sequence> drain() {
    List<Sequence> left = new ArrayList<>(running);
    left.addAll(waiting);
    running.clear();
    waiting.clear();
    for (Sequence s : left) {
      release(s);
    }
    return left;
  }

  /** Publishes the running and waiting counts and the KV tokens used, for snapshots and gauges. */
  void publish() {
    long now = clock.getAsLong();
    synchronized (loadLock) {
      accrue(now);
      publishedRunning = running.size();
      publishedWaiting = waiting.size();
      publishedKvUsed = kvUsed;
    }
    if (running.size() > peakRunning) {
      peakRunning = running.size();
    }
  }

  /**
   * The requests in the engine loop's inbox now (submitted, not yet handed to the scheduler): the load integrals
   * count them as waiting, as {@code EngineLoop.waitingNow} does.
   */
  void inboxChanged(int size) {
    long now = clock.getAsLong();
    synchronized (loadLock) {
      accrue(now);
      inInbox = size;
    }
  }

  /** Adds the published counts times the time since the last change (guarded by loadLock). */
  private void accrue(long now) {
    if (now <= loadAt) {
      return;
    }
    double dt = (now - loadAt) / 1e9;
    runningSeconds += publishedRunning * dt;
    waitingSeconds += (publishedWaiting + inInbox) * dt;
    kvTokenSeconds += publishedKvUsed * dt;
    loadAt = now;
  }

  /** {@return {seconds since the scheduler started, running, waiting and KV tokens each integrated over them}} */
  double[] load() {
    long now = clock.getAsLong();
    synchronized (loadLock) {
      accrue(now);
      return new double[] {Math.max(0, loadAt - loadSince) / 1e9, runningSeconds, waitingSeconds, kvTokenSeconds};
    }
  }

  int publishedRunning() {
    return publishedRunning;
  }

  int publishedWaiting() {
    return publishedWaiting;
  }

  int publishedKvUsed() {
    return publishedKvUsed;
  }

  /** The most requests that were ever in the running batch at once. */
  int peakRunning() {
    return peakRunning;
  }

  /** Rejects what can never run; queues the rest. */
  private void intake(Sequence s) {
    int vocab = model.vocabSize();
    int[] prompt = s.request.promptRef();
    for (int i = 0; i < prompt.length; i++) {
      if (prompt[i] >= vocab) {
        finishAfterStep(s, FinishReason.ERROR, "promptTokens: token " + prompt[i] + " at index " + i
            + " is outside the model's vocabulary of " + vocab + " tokens");
        return;
      }
    }
    if (s.promptLength + 1 > budget) {
      finishAfterStep(s, FinishReason.ERROR, promptTooLarge(s));
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
    synchronized (servedLock) {
      servedVersion = next.version();
      servedLock.notifyAll();
    }
    long now = clock.getAsLong();
    for (Iterator<Sequence> it = running.iterator(); it.hasNext(); ) {
      Sequence s = it.next();
      int before = s.held;
      try {
        prefill(s);
        kvUsed += s.held - before;
        s.phases.prefill(now, s.length(), model.version());
        telemetry.weightUpdated(s, now, model.version());
      } catch (RuntimeException e) {
        it.remove();
        s.held = before;
        release(s);
        finishAfterStep(s, FinishReason.ERROR, "model failed recomputing after a weight update: " + e);
      } catch (Error e) {
        // still running, for drain(): it must release what the budget counts for it
        s.held = before;
        throw e;
      }
    }
  }

  private void admit() {
    while (!waiting.isEmpty() && running.size() < maxRunning) {
      Sequence s = waiting.peekFirst();
      int need = s.length() + 1;
      if (need > budget) {
        waiting.pollFirst();
        if (s.generated() == 0) {
          finishAfterStep(s, FinishReason.ERROR, promptTooLarge(s));
        } else {
          finishAfterStep(s, FinishReason.LENGTH, null);
        }
        continue;
      }
      // room for this request and its next token, beside one more token for each running request
      if (kvUsed + running.size() + need > budget) {
        break;
      }
      waiting.pollFirst();
      long at = clock.getAsLong();
      if (s.scheduled == 0) {
        s.scheduled = at;
      }
      s.phases.prefill(at, s.length(), model.version());
      try {
        prefill(s);
      } catch (RuntimeException e) {
        s.cache = null;
        s.held = 0;
        finishAfterStep(s, FinishReason.ERROR, "model failed in prefill: " + e);
        continue;
      } catch (Error e) {
        // the scheduler thread dies of this; put the request back where it was, so that drain() returns
        // it and the crash path finishes it like the others (otherwise its future never completes)
        s.cache = null;
        s.held = 0;
        waiting.addFirst(s);
        throw e;
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
        finishAfterStep(s, FinishReason.ERROR, "sampling failed: " + e.getMessage());
        continue;
      }
      long now = clock.getAsLong();
      s.append(token, logprob);
      s.sampledWith(s.logitsVersion);
      s.phases.tokenSampled(now, s.logitsVersion);
      s.lastToken = now;
      if (s.firstToken == 0) {
        s.firstToken = now;
      }
      FinishReason done = token == eos && !p.ignoreEos() ? FinishReason.STOP
          : s.generated() >= p.maxTokens() ? FinishReason.LENGTH : null;
      if (done != null) {
        it.remove();
        release(s);
        finishAfterStep(s, done, null);
      }
    }
    // feed each sampled token; preempt the most recently admitted requests when the budget is full
    for (int i = 0; i < running.size(); i++) {
      Sequence s = running.get(i);
      if (s.held + 1 > budget) {
        // even alone it could not grow: it has reached the engine's capacity
        running.remove(i--);
        release(s);
        finishAfterStep(s, FinishReason.LENGTH, null);
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
        finishAfterStep(s, FinishReason.ERROR, "model failed in decode: " + e);
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
    long now = clock.getAsLong();
    s.phases.preempted(now);
    telemetry.preempted(s, now);
    waiting.addFirst(s);
  }

  private void release(Sequence s) {
    kvUsed -= s.held;
    s.held = 0;
    s.cache = null;
  }
}
