package dev.ravel.workers.engine;

import static dev.ravel.workers.engine.Requests.config;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.workers.model.KvCache;
import dev.ravel.workers.model.LanguageModel;
import io.opentelemetry.api.OpenTelemetry;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/** The scheduler driven step by step on the test thread, with a fake model and clock. */
final class BatchSchedulerTest {
  private static final int POISON = 13;

  private final AtomicLong now = new AtomicLong(1_000);
  private final LongSupplier clock = now::incrementAndGet;
  private RequestTelemetry telemetry;

  private BatchScheduler scheduler(EngineConfig config, LanguageModel model) {
    EngineMetrics metrics = new EngineMetrics(OpenTelemetry.noop().getMeter("test"), config.modelName());
    telemetry = new RequestTelemetry(config, OpenTelemetry.noop().getTracer("test"), metrics, clock);
    return new BatchScheduler(config, model, telemetry, clock);
  }

  private static FakeModel endless(long version) {
    return FakeModel.of(version).eosLogit(FakeModel.NEVER);
  }

  private static Sequence sequence(String id, int[] prompt, int maxTokens) {
    return new Sequence(GenerationRequest.of(id, prompt, Requests.params(maxTokens, 1), TraceCarrier.EMPTY), 1);
  }

  /** A prompt of {@code promptLength} tokens, none EOS and the first not {@link #POISON}. */
  private static Sequence sequence(String id, int promptLength, int maxTokens) {
    return sequence(id, Requests.prompt(promptLength, 0), maxTokens);
  }

  private static GenerationResult result(Sequence s) {
    assertThat(s.future).as(s.request.requestId()).isDone();
    return s.future.join();
  }

  private static void steps(BatchScheduler scheduler, int n) {
    for (int i = 0; i < n; i++) {
      scheduler.step(List.of());
    }
  }

  @Test
  void step_noRoomBesideTheRunningBatchsNextTokens_leavesTheRequestWaitingUntilTheBatchShrinks() {
    BatchScheduler scheduler = scheduler(config().kvTokenBudget(9).build(), endless(1));
    Sequence a = sequence("a", 4, 3);
    Sequence b = sequence("b", 4, 3);

    // b needs 4 + 1 beside a's 4 and a's next token: 10 > 9
    scheduler.step(List.of(a, b));

    assertThat(scheduler.publishedRunning()).isEqualTo(1);
    assertThat(scheduler.publishedWaiting()).isEqualTo(1);
    assertThat(scheduler.publishedKvUsed()).isEqualTo(5);
    assertThat(b.scheduled).isZero();

    steps(scheduler, 2);

    assertThat(result(a).finishReason()).isEqualTo(FinishReason.LENGTH);
    assertThat(b.scheduled).isZero();
    assertThat(scheduler.publishedKvUsed()).isZero();

    scheduler.step(List.of());

    assertThat(b.scheduled).isPositive();
    assertThat(scheduler.publishedRunning()).isEqualTo(1);
    assertThat(scheduler.publishedWaiting()).isZero();
    assertThat(scheduler.publishedKvUsed()).isEqualTo(5);
  }

  @Test
  void step_exactlyRoomBesideTheRunningBatchsNextTokens_admitsBoth() {
    BatchScheduler scheduler = scheduler(config().kvTokenBudget(10).build(), endless(1));

    scheduler.step(List.of(sequence("a", 4, 3), sequence("b", 4, 3)));

    assertThat(scheduler.publishedRunning()).isEqualTo(2);
    assertThat(scheduler.publishedWaiting()).isZero();
    assertThat(scheduler.publishedKvUsed()).isEqualTo(10);
    assertThat(scheduler.peakRunning()).isEqualTo(2);
  }

  @Test
  void load_integratesThePublishedCountsOverTheTimeTheyHeld() {
    AtomicLong at = new AtomicLong(5_000_000_000L);
    EngineConfig config = config().kvTokenBudget(10).build();
    EngineMetrics metrics = new EngineMetrics(OpenTelemetry.noop().getMeter("test"), config.modelName());
    BatchScheduler scheduler = new BatchScheduler(config, endless(1),
        new RequestTelemetry(config, OpenTelemetry.noop().getTracer("test"), metrics, at::get), at::get);

    at.addAndGet(1_000_000_000L); // a second idle: nothing running, nothing accrues
    scheduler.step(List.of(sequence("a", 4, 3), sequence("b", 4, 3))); // both admitted: 2 running, 10 KV tokens
    at.addAndGet(2_000_000_000L);

    assertThat(scheduler.load()).containsExactly(3.0, 4.0, 0.0, 20.0); // 2 s of 2 requests holding 10 tokens
    at.addAndGet(500_000_000L);
    assertThat(scheduler.load()[0]).isEqualTo(3.5); // a later read goes on from the last
    assertThat(scheduler.load()[1]).isEqualTo(5.0);

    scheduler.inboxChanged(3); // three requests submitted while the model steps: waiting, as the gauge says
    at.addAndGet(1_000_000_000L);
    scheduler.inboxChanged(0);
    assertThat(scheduler.load()[2]).isEqualTo(3.0);
  }

  @Test
  void step_maxRunningRequests_admitsTheFirstInArrivalOrder() {
    BatchScheduler scheduler = scheduler(config().maxRunningRequests(2).build(), endless(1));
    Sequence a = sequence("a", 3, 5);
    Sequence b = sequence("b", 3, 5);
    Sequence c = sequence("c", 1, 5);

    scheduler.step(List.of(a, b, c));

    assertThat(a.scheduled).isPositive();
    assertThat(b.scheduled).isPositive();
    assertThat(c.scheduled).isZero();
    assertThat(scheduler.publishedRunning()).isEqualTo(2);
    assertThat(scheduler.publishedWaiting()).isEqualTo(1);
    assertThat(scheduler.peakRunning()).isEqualTo(2);
  }

  @Test
  void decode_budgetFull_preemptsTheMostRecentlyAdmittedToTheFrontOfTheQueue() {
    BatchScheduler scheduler = scheduler(config().kvTokenBudget(8).build(), endless(1));
    Sequence a = sequence("a", 3, 20);
    Sequence b = sequence("b", 3, 20);
    scheduler.step(List.of(a, b));
    assertThat(scheduler.publishedKvUsed()).isEqualTo(8);

    // c arrives and waits; feeding a's second token finds the budget full: b, admitted last, is evicted
    Sequence c = sequence("c", 1, 20);
    scheduler.step(List.of(c));

    assertThat(scheduler.publishedRunning()).isEqualTo(1);
    assertThat(scheduler.publishedWaiting()).isEqualTo(2);
    assertThat(scheduler.publishedKvUsed()).isEqualTo(5);
    assertThat(b.preemptions).isEqualTo(1);
    assertThat(b.held).isZero();
    assertThat(b.cache).isNull();
    assertThat(b.generated()).isEqualTo(2);
    assertThat(b.events).singleElement().satisfies(e -> {
      assertThat(e.name()).isEqualTo(EngineNames.EVENT_PREEMPTED);
      assertThat(e.attributes().get(EngineNames.USAGE_COMPLETION_TOKENS)).isEqualTo(2L);
    });
    assertThat(a.preemptions).isZero();
    assertThat(telemetry.preemptions()).isEqualTo(1);

    // c would fit (5 + 1 + 2 <= 8) but b went back ahead of it and does not (5 + 1 + 6 > 8)
    scheduler.step(List.of());

    assertThat(c.scheduled).isZero();
    assertThat(scheduler.publishedWaiting()).isEqualTo(2);
  }

  @Test
  void decode_requestBeingFedIsTheLastAdmitted_evictsItselfAndResumesFromItsTokens() {
    BatchScheduler scheduler = scheduler(config().kvTokenBudget(8).build(), endless(1));
    Sequence a = sequence("a", 3, 3);
    Sequence b = sequence("b", 2, 3);
    scheduler.step(List.of(a, b));
    long firstAdmission = b.scheduled;

    // a's feed fills the budget (8); b's feed then finds it full and b itself is evicted
    scheduler.step(List.of());

    assertThat(b.preemptions).isEqualTo(1);
    assertThat(b.generated()).isEqualTo(2);
    assertThat(scheduler.publishedKvUsed()).isEqualTo(5);
    int[] beforePreemption = b.completion();

    steps(scheduler, 2);

    GenerationResult rb = result(b);
    assertThat(result(a).finishReason()).isEqualTo(FinishReason.LENGTH);
    assertThat(rb.finishReason()).isEqualTo(FinishReason.LENGTH);
    assertThat(rb.completionTokens()).hasSize(3).startsWith(beforePreemption);
    assertThat(rb.stats().preemptions()).isEqualTo(1);
    assertThat(rb.stats().scheduledEpochNanos()).isEqualTo(firstAdmission);
    assertThat(scheduler.idle()).isTrue();
    assertThat(scheduler.publishedKvUsed()).isZero();
  }

  @Test
  void step_queuedSequenceWithTokensBeyondTheBudget_finishesWithLength() {
    BatchScheduler scheduler = scheduler(config().kvTokenBudget(6).build(), endless(1));
    Sequence s = sequence("s", 3, 10);
    for (int token = 5; token <= 7; token++) {
      s.append(token, -1f);
    }

    scheduler.step(List.of(s));

    GenerationResult r = result(s);
    assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
    assertThat(r.completionTokens()).containsExactly(5, 6, 7);
    assertThat(r.error()).isNull();
    assertThat(scheduler.idle()).isTrue();
  }

  @Test
  void step_modelFailsInPrefill_errorsThatRequestAndServesTheOthers() {
    BatchScheduler scheduler = scheduler(config().build(), new Poisoned(endless(1), Poisoned.Mode.PREFILL));
    Sequence ok = sequence("ok", 3, 5);
    Sequence bad = sequence("bad", new int[] {POISON, 2, 3}, 5);

    scheduler.step(List.of(ok, bad));

    GenerationResult r = result(bad);
    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).startsWith("model failed in prefill: ").contains("poisoned");
    assertThat(bad.cache).isNull();
    assertThat(bad.held).isZero();
    assertThat(scheduler.publishedRunning()).isEqualTo(1);
    assertThat(scheduler.publishedKvUsed()).isEqualTo(4);
  }

  @Test
  void step_modelThrowsAnErrorInPrefill_rethrowsItWithThatRequestBackFirstInTheQueueForDrain() {
    BatchScheduler scheduler = scheduler(config().build(), new Poisoned(endless(1), Poisoned.Mode.PREFILL_ERROR));
    Sequence ok = sequence("ok", 3, 5);
    Sequence bad = sequence("bad", new int[] {POISON, 2, 3}, 5);
    Sequence later = sequence("later", 3, 5);

    assertThatThrownBy(() -> scheduler.step(List.of(ok, bad, later)))
        .isInstanceOf(OutOfMemoryError.class).hasMessage("poisoned prefill");

    assertThat(bad.future).isNotDone();
    assertThat(bad.cache).isNull();
    assertThat(bad.held).isZero();
    List<Sequence> left = scheduler.drain();
    scheduler.publish();
    assertThat(left).containsExactly(ok, bad, later);
    assertThat(scheduler.publishedKvUsed()).isZero();
  }

  @Test
  void decode_modelFailsFeedingAToken_errorsThatRequestAndReleasesItsKv() {
    BatchScheduler scheduler = scheduler(config().build(), new Poisoned(endless(1), Poisoned.Mode.DECODE));
    Sequence ok = sequence("ok", 3, 5);
    Sequence bad = sequence("bad", new int[] {POISON, 2, 3, 4}, 5);

    scheduler.step(List.of(ok, bad));

    GenerationResult r = result(bad);
    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).startsWith("model failed in decode: ");
    assertThat(r.completionTokens()).hasSize(1);
    assertThat(scheduler.publishedRunning()).isEqualTo(1);
    assertThat(scheduler.publishedKvUsed()).isEqualTo(4);
  }

  @Test
  void decode_nanLogits_errorsThatRequestNamingTheSamplingFailure() {
    BatchScheduler scheduler = scheduler(config().build(), new Poisoned(endless(1), Poisoned.Mode.NAN_LOGITS));
    Sequence ok = sequence("ok", 3, 5);
    Sequence bad = sequence("bad", new int[] {POISON, 2}, 5);

    scheduler.step(List.of(ok, bad));

    GenerationResult r = result(bad);
    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).isEqualTo("sampling failed: the model produced a NaN logit (token 0)");
    assertThat(r.completionTokens()).isEmpty();
    assertThat(scheduler.publishedKvUsed()).isEqualTo(4);
  }

  @Test
  void step_afterUpdateModel_recomputesRunningCachesWithAnEventAndSamplesFromTheNewVersion() {
    BatchScheduler scheduler = scheduler(config().build(), endless(1));
    Sequence a = sequence("a", 3, 10);
    Sequence b = sequence("b", 4, 10);
    scheduler.step(List.of(a, b));
    assertThat(a.lastTokenVersion).isEqualTo(1);

    scheduler.updateModel(endless(2));
    long before = now.get();
    scheduler.step(List.of());

    for (Sequence s : List.of(a, b)) {
      assertThat(s.lastTokenVersion).isEqualTo(2);
      assertThat(s.held).isEqualTo(s.length());
      assertThat(s.events).singleElement().satisfies(e -> {
        assertThat(e.name()).isEqualTo(EngineNames.EVENT_WEIGHT_UPDATE);
        assertThat(e.attributes().get(EngineNames.WEIGHT_VERSION)).isEqualTo(2L);
        assertThat(e.epochNanos()).isGreaterThan(before);
      });
    }
    assertThat(scheduler.publishedKvUsed()).isEqualTo(a.length() + b.length());
  }

  @Test
  void step_newModelFailsRecomputing_errorsThatRequestAndReleasesItsKv() {
    BatchScheduler scheduler = scheduler(config().build(), endless(1));
    Sequence ok = sequence("ok", 3, 10);
    Sequence bad = sequence("bad", new int[] {POISON, 2, 3}, 10);
    scheduler.step(List.of(ok, bad));

    scheduler.updateModel(new Poisoned(endless(2), Poisoned.Mode.PREFILL));
    scheduler.step(List.of());

    GenerationResult r = result(bad);
    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).startsWith("model failed recomputing after a weight update: ");
    assertThat(r.weightVersion()).isEqualTo(1);
    assertThat(bad.cache).isNull();
    assertThat(scheduler.publishedRunning()).isEqualTo(1);
    assertThat(scheduler.publishedKvUsed()).isEqualTo(ok.length());
  }

  @Test
  void drain_runningAndWaiting_returnsRunningFirstWithTheirKvReleased() {
    BatchScheduler scheduler = scheduler(config().maxRunningRequests(1).build(), endless(1));
    Sequence a = sequence("a", 3, 10);
    Sequence b = sequence("b", 3, 10);
    scheduler.step(List.of(a, b));

    List<Sequence> left = scheduler.drain();
    scheduler.publish();

    assertThat(left).containsExactly(a, b);
    assertThat(a.cache).isNull();
    assertThat(a.held).isZero();
    assertThat(scheduler.idle()).isTrue();
    assertThat(scheduler.publishedRunning()).isZero();
    assertThat(scheduler.publishedWaiting()).isZero();
    assertThat(scheduler.publishedKvUsed()).isZero();
    assertThat(a.future).isNotDone();
  }

  /** A {@link FakeModel} whose forward calls over a sequence starting with {@link #POISON} misbehave. */
  private static final class Poisoned implements LanguageModel {
    enum Mode { PREFILL, PREFILL_ERROR, DECODE, NAN_LOGITS }

    private final FakeModel inner;
    private final Mode mode;

    Poisoned(FakeModel inner, Mode mode) {
      this.inner = inner;
      this.mode = mode;
    }

    @Override
    public int vocabSize() {
      return inner.vocabSize();
    }

    @Override
    public long version() {
      return inner.version();
    }

    @Override
    public KvCache newCache() {
      return inner.newCache();
    }

    @Override
    public void forward(KvCache cache, int[] tokens, int from, int to, float[] logits) {
      inner.forward(cache, tokens, from, to, logits);
      if (tokens[0] != POISON) {
        return;
      }
      switch (mode) {
        case PREFILL -> {
          if (from == 0) {
            throw new IllegalStateException("poisoned prefill");
          }
        }
        case PREFILL_ERROR -> {
          if (from == 0) {
            throw new OutOfMemoryError("poisoned prefill");
          }
        }
        case DECODE -> {
          if (from > 0) {
            throw new IllegalStateException("poisoned decode");
          }
        }
        case NAN_LOGITS -> logits[0] = Float.NaN;
      }
    }
  }
}
