package dev.ravel.workers.engine;

import static dev.ravel.workers.engine.Requests.batch;
import static dev.ravel.workers.engine.Requests.config;
import static dev.ravel.workers.engine.Requests.request;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.SpanNames;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120) // a hang guard only: nothing here asserts a duration
final class EngineLifecycleTest {
  private final List<EmbeddedEngine> engines = new ArrayList<>();

  private EmbeddedEngine engine(EngineConfig config, FakeModel model, OpenTelemetry otel) {
    EmbeddedEngine e = new EmbeddedEngine(config, model, otel);
    engines.add(e);
    return e;
  }

  @AfterEach
  void closeEngines() {
    engines.forEach(EmbeddedEngine::close);
  }

  @Test
  void submit_fromEightThreadsAtOnce_everyFutureCompletesWithItsOwnResult() throws Exception {
    EmbeddedEngine engine = engine(config().maxRunningRequests(16).build(), FakeModel.of(1), OpenTelemetry.noop());
    int threads = 8;
    int perThread = 60;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<List<CompletableFuture<GenerationResult>>>> submitted = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        submitted.add(pool.submit(() -> {
          start.await();
          List<CompletableFuture<GenerationResult>> mine = new ArrayList<>();
          for (GenerationRequest r : batch("t" + thread, perThread, 6)) {
            mine.add(engine.submit(r));
          }
          return mine;
        }));
      }
      start.countDown();

      Set<String> ids = new HashSet<>();
      for (int t = 0; t < threads; t++) {
        List<CompletableFuture<GenerationResult>> mine = submitted.get(t).get(10, TimeUnit.SECONDS);
        for (int i = 0; i < perThread; i++) {
          GenerationResult r = mine.get(i).get(10, TimeUnit.SECONDS);
          assertThat(r.requestId()).isEqualTo("t" + t + "-" + i);
          assertThat(r.finishReason()).isIn(FinishReason.STOP, FinishReason.LENGTH);
          ids.add(r.requestId());
        }
      }
      assertThat(ids).hasSize(threads * perThread);
      assertThat(engine.snapshot().requestsFinishedTotal()).isEqualTo(threads * perThread);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void pause_midGenerationThenUpdateAndResume_tokensSayWhichVersionSampledThem() throws Exception {
    FakeModel v2 = FakeModel.of(2).eosLogit(FakeModel.NEVER).forcing(7);
    CountDownLatch inForward = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicLong calls = new AtomicLong();
    FakeModel v1 = FakeModel.of(1).eosLogit(FakeModel.NEVER).onForward(() -> {
      if (calls.incrementAndGet() == 10) {
        inForward.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
    EmbeddedEngine engine = engine(config().build(), v1, OpenTelemetry.noop());
    CompletableFuture<GenerationResult> result = engine.submit(request("keep", 4, 30, 3));
    assertThat(inForward.await(60, TimeUnit.SECONDS)).isTrue();
    // pause while an iteration is under way: it returns once that iteration has ended
    CompletableFuture<Void> paused = CompletableFuture.runAsync(engine::pause);
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!engine.isPaused() && System.nanoTime() < deadline) { // the pause is waiting for the iteration to end
      Thread.sleep(1);
    }
    assertThat(engine.isPaused()).isTrue();
    engine.updateModel(v2);
    release.countDown();
    paused.get(60, TimeUnit.SECONDS);
    assertThat(engine.isPaused()).isTrue();
    assertThat(result).isNotDone();
    assertThat(engine.snapshot().running()).isEqualTo(1);

    engine.resume();
    GenerationResult r = result.get(60, TimeUnit.SECONDS);

    assertThat(r.completionTokens()).hasSize(30);
    List<VersionSpan> spans = r.versionSpans();
    assertThat(spans).hasSize(2);
    assertThat(spans.get(0).version()).isEqualTo(1);
    assertThat(spans.get(0).start()).isZero();
    assertThat(spans.get(1).version()).isEqualTo(2);
    assertThat(spans.get(1).start()).isEqualTo(spans.get(0).end()).isPositive();
    assertThat(spans.get(1).end()).isEqualTo(30);
    int[] c = r.completionTokens();
    for (int i = spans.get(1).start(); i < 30; i++) {
      assertThat(c[i]).as("token %d, sampled by version 2", i).isEqualTo(7);
    }
    assertThat(r.weightVersion()).isEqualTo(2);
    assertThat(r.oldestWeightVersion()).isEqualTo(1);
  }

  @Test
  void abortAll_requestsHeld_endWithAbortAndTheEngineServesOn() throws Exception {
    EmbeddedEngine engine = engine(config().build(), FakeModel.of(1), OpenTelemetry.noop());
    engine.pause();
    CompletableFuture<GenerationResult> held = engine.submit(request("held", 4, 5, 1));
    engine.abortAll();
    assertThat(held.get(60, TimeUnit.SECONDS).finishReason()).isEqualTo(FinishReason.ABORT);
    engine.resume();
    assertThat(engine.submit(request("after", 4, 5, 2)).get(60, TimeUnit.SECONDS).succeeded()).isTrue();
    assertThat(engine.awaitIdle(60_000)).isTrue();
  }

  @Test
  void updateModel_midGeneration_laterTokensComeFromTheNewVersion() {
    Telemetry telemetry = new Telemetry();
    try {
      FakeModel v2 = FakeModel.of(2).eosLogit(FakeModel.NEVER).forcing(7);
      AtomicReference<EmbeddedEngine> ref = new AtomicReference<>();
      AtomicLong calls = new AtomicLong();
      FakeModel v1 = FakeModel.of(1).eosLogit(FakeModel.NEVER).onForward(() -> {
        if (calls.incrementAndGet() == 20) {
          ref.get().updateModel(v2);
        }
      });
      EmbeddedEngine engine = engine(config().tracing(true).build(), v1, telemetry.sdk);
      ref.set(engine);

      List<GenerationResult> results = engine.generate(batch("u", 4, 30));
      GenerationResult later = engine.submit(request("later", 4, 5, 9)).join();

      boolean v1Tokens = false;
      for (GenerationResult r : results) {
        assertThat(r.weightVersion()).isEqualTo(2);
        int[] c = r.completionTokens();
        assertThat(c).hasSize(30);
        for (int i = c.length - 20; i < c.length; i++) {
          assertThat(c[i]).as("token %d of %s", i, r.requestId()).isEqualTo(7);
        }
        v1Tokens |= c[0] != 7;
      }
      assertThat(v1Tokens).as("some tokens came from version 1").isTrue();
      assertThat(later.weightVersion()).isEqualTo(2);
      assertThat(later.completionTokens()).containsOnly(7);
      for (SpanData span : telemetry.spansNamed(SpanNames.LLM_REQUEST)) {
        assertThat(span.getAttributes().get(EngineNames.WEIGHT_VERSION)).isEqualTo(2L);
        if (!span.getAttributes().get(EngineNames.REQUEST_ID).equals("later")) {
          assertThat(span.getEvents()).extracting(EventData::getName).containsExactly(EngineNames.EVENT_WEIGHT_UPDATE);
        }
      }
    } finally {
      telemetry.close();
    }
  }

  @Test
  void updateModelAndWait_idleEngine_switchesAtOnceAndReportsTheVersionItServes() {
    EmbeddedEngine engine = engine(config().build(), FakeModel.of(1), OpenTelemetry.noop());
    try {
      assertThat(engine.servedVersion()).isEqualTo(1);
      // no request is waiting: the scheduler is woken to switch, not left on version 1 until the next batch
      assertThat(engine.updateModelAndWait(FakeModel.of(3))).isEqualTo(3);
      assertThat(engine.servedVersion()).isEqualTo(3);
      assertThat(engine.submit(request("after", 4, 3, 9)).join().weightVersion()).isEqualTo(3);
    } finally {
      engine.close();
    }
  }

  @Test
  void updateModelAndWait_midGeneration_returnsOnceTheRunningBatchStepsWithTheNewVersion() throws Exception {
    CountDownLatch generating = new CountDownLatch(1);
    FakeModel v1 = FakeModel.of(1).eosLogit(FakeModel.NEVER).onForward(() -> {
      generating.countDown();
      try {
        Thread.sleep(2); // slows v1 down; it cannot finish on its own before the switch in any case
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    EmbeddedEngine engine = engine(config().kvTokenBudget(10_000_000).build(), v1, OpenTelemetry.noop());
    try {
      CompletableFuture<List<GenerationResult>> running = CompletableFuture.supplyAsync(
          () -> engine.generate(batch("m", 4, 100_000))); // v1 never ends a request: 100,000 tokens, no EOS
      assertThat(generating.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      // v2 ends every request at its first token (EOS always wins): the batch can end only after the switch
      assertThat(engine.updateModelAndWait(FakeModel.of(2).eosLogit(100f))).isEqualTo(2);
      assertThat(engine.servedVersion()).isEqualTo(2);
      assertThat(running.get(60, java.util.concurrent.TimeUnit.SECONDS))
          .allSatisfy(r -> assertThat(r.weightVersion()).isEqualTo(2));
    } finally {
      engine.close();
    }
  }

  @Test
  void close_withRunningAndWaitingRequests_abortsThemAndStopsTheThread() throws Exception {
    FakeModel model = FakeModel.of(1).eosLogit(FakeModel.NEVER).delayed(500_000);
    EmbeddedEngine engine = engine(config().maxRunningRequests(2).build(), model, OpenTelemetry.noop());
    List<CompletableFuture<GenerationResult>> futures = new ArrayList<>();
    for (GenerationRequest r : batch("x", 6, 1_000_000)) {
      futures.add(engine.submit(r));
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (engine.snapshot().running() < 2 && System.nanoTime() < deadline) {
      Thread.sleep(2);
    }
    assertThat(engine.snapshot().running()).isEqualTo(2);
    // Once both are running, every forward call is a decode feed, and a step samples a token for each running
    // request before it feeds any: the first forward call after this point means both hold a token.
    long calls = model.forwardCalls.get();
    while (model.forwardCalls.get() <= calls && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    assertThat(model.forwardCalls.get()).as("a decode step after both were admitted").isGreaterThan(calls);

    engine.close();

    assertThat(engine.schedulerAlive()).isFalse();
    assertThat(futures).allSatisfy(f -> assertThat(f).isDone());
    List<GenerationResult> results = futures.stream().map(CompletableFuture::join).toList();
    assertThat(results).allSatisfy(r -> {
      assertThat(r.finishReason()).isEqualTo(FinishReason.ABORT);
      assertThat(r.error()).isNull();
    });
    assertThat(results.subList(0, 2)).allSatisfy(r -> assertThat(r.completionTokens()).isNotEmpty());
    assertThat(results.subList(2, 6)).allSatisfy(r -> assertThat(r.completionTokens()).isEmpty());
    assertThat(engine.snapshot().requestsFinished(FinishReason.ABORT)).isEqualTo(6);
    assertThat(engine.snapshot().running()).isZero();
    assertThat(engine.snapshot().waiting()).isZero();

    GenerationResult afterClose = engine.submit(request("late", 3, 4, 1)).get(30, TimeUnit.SECONDS);
    assertThat(afterClose.finishReason()).isEqualTo(FinishReason.ABORT);
    engine.close();
  }

  @Test
  @Timeout(60)
  void submit_modelThrowsAnErrorInPrefillAtAdmission_failsThatRequestAndTheOthersNamingTheError() throws Exception {
    Telemetry telemetry = new Telemetry();
    try {
      // forward call 1 prefills p-0; call 2 prefills p-1, which has left the queue but is not running yet
      AtomicLong calls = new AtomicLong();
      FakeModel model = FakeModel.of(1).eosLogit(FakeModel.NEVER).onForward(() -> {
        if (calls.incrementAndGet() == 2) {
          throw new OutOfMemoryError("simulated in prefill");
        }
      });
      EmbeddedEngine engine = engine(config().tracing(true).build(), model, telemetry.sdk);

      List<GenerationResult> results = engine.generate(batch("p", 3, 10));

      String error = "engine failed: java.lang.OutOfMemoryError: simulated in prefill";
      assertThat(results).extracting(GenerationResult::requestId).containsExactly("p-0", "p-1", "p-2");
      assertThat(results).allSatisfy(r -> {
        assertThat(r.finishReason()).as(r.requestId()).isEqualTo(FinishReason.ERROR);
        assertThat(r.error()).as(r.requestId()).isEqualTo(error);
        assertThat(r.completionTokens()).as(r.requestId()).isEmpty();
      });
      assertThat(results.get(1).stats().scheduledEpochNanos()).as("p-1 was admitted").isPositive();
      assertThat(calls.get()).isEqualTo(2);
      SpanData span = telemetry.spansNamed(SpanNames.LLM_REQUEST).stream()
          .filter(d -> d.getAttributes().get(EngineNames.REQUEST_ID).equals("p-1")).findFirst().orElseThrow();
      assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
      assertThat(span.getStatus().getDescription()).isEqualTo(error);
      engine.close();
      assertThat(engine.schedulerAlive()).isFalse();
      EngineStats stats = engine.snapshot();
      assertThat(stats.requestsFinished(FinishReason.ERROR)).isEqualTo(3);
      assertThat(stats.running()).isZero();
      assertThat(stats.waiting()).isZero();
      assertThat(stats.kvTokensUsed()).isZero();
      GenerationResult later = engine.submit(request("later", 3, 4, 1)).get(30, TimeUnit.SECONDS);
      assertThat(later.error()).isEqualTo(error);
    } finally {
      telemetry.close();
    }
  }

  @Test
  void constructor_idleEngine_parksItsNamedDaemonThreadWithoutSpinning() throws Exception {
    FakeModel model = FakeModel.of(1);
    EmbeddedEngine engine = engine(config().modelName("idle").build(), model, OpenTelemetry.noop());
    engine.generate(batch("i", 2, 3));
    Thread scheduler = Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("ravel-engine-idle-")).findFirst().orElseThrow();
    assertThat(scheduler.isDaemon()).isTrue();

    // Parked means waiting, with no timeout, on the loop's wake-up condition: such a thread runs again only
    // when signalled, where a spinning or polling loop shows RUNNABLE or TIMED_WAITING (awaitNanos). This is
    // shown by the thread's own state, not by watching a window in which an idle engine has nothing to do.
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!parkedUntimed(scheduler) && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }

    assertThat(parkedUntimed(scheduler)).as("%s %s", scheduler.getState(), List.of(scheduler.getStackTrace()))
        .isTrue();
    engine.close();
    assertThat(scheduler.isAlive()).isFalse();
  }

  /** The thread waits, with no timeout, on a condition from inside the engine's loop. */
  private static boolean parkedUntimed(Thread t) {
    StackTraceElement[] stack = t.getStackTrace();
    boolean inAwait = false;
    boolean inLoop = false;
    for (StackTraceElement e : stack) {
      inAwait |= e.getClassName().endsWith("ConditionObject") && e.getMethodName().equals("await");
      inLoop |= e.getClassName().equals(EngineLoop.class.getName()) && e.getMethodName().equals("run");
    }
    return inAwait && inLoop && t.getState() == Thread.State.WAITING;
  }
}
