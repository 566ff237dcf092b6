package dev.ravel.workers.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.reward.RewardEnvironment;
import dev.ravel.workers.task.Problem;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.ray.api.ObjectRef;
import io.ray.api.exception.RayActorException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The failover on in-process actors whose "process" dies: the actor throws Ray's {@code RayActorException}
 * and from then on answers with a new process id and the initial weights, as a restarted actor does.
 */
final class FailoverTest {
  private final InMemorySpanExporter exported = InMemorySpanExporter.create();
  private final OpenTelemetrySdk sdk = OpenTelemetrySdk.builder()
      .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exported)).build())
      .build();
  private final Spans spans = Spans.create(sdk, EnumSet.allOf(SpanGroup.class));
  private final List<RavelActorHandle<?>> handles = new ArrayList<>();

  @AfterEach
  void close() {
    handles.forEach(RavelActorHandle::release);
    sdk.close();
  }

  /** An object reference that is only a value: what the fake worker is given to load. */
  record Weights(long version) implements ObjectRef<Long>, Serializable {
    @Override
    public Long get() {
      return version;
    }

    @Override
    public Long get(long timeoutMs) {
      return version;
    }
  }

  /** A worker whose process dies under its first {@code deaths} generate calls. */
  static final class DyingWorker extends RavelActor implements GenerationWorker {
    final AtomicInteger deathsLeft;
    volatile long pid = 100;
    volatile long loaded = 0;
    final List<String> log = new CopyOnWriteArrayList<>();
    final List<String> parents = new CopyOnWriteArrayList<>();
    volatile boolean restartable = true;
    volatile boolean dead;
    /** A restart Ray cannot place (no node left for it): asked for its process id, it never answers. */
    volatile boolean unplaceable;
    final java.util.concurrent.CountDownLatch released = new java.util.concurrent.CountDownLatch(1);

    DyingWorker(int deaths) {
      this.deathsLeft = new AtomicInteger(deaths);
    }

    @Override
    public List<GenerationResult> generate(List<GenerationRequest> requests) {
      log.add("generate " + requests.stream().map(GenerationRequest::requestId).toList() + " at v" + loaded);
      parents.add(Span.current().getSpanContext().getSpanId());
      if (deathsLeft.getAndDecrement() > 0) {
        dead = !restartable;
        pid++; // the restarted process
        loaded = 0; // built again from the constructor's (initial) weights
        throw new RayActorException(1, "The actor died unexpectedly before finishing this task.", null);
      }
      return requests.stream().map(r -> GenerationResult.builder().requestId(r.requestId())
          .promptTokens(r.promptTokens()).completionTokens(new int[] {1, 2}).logprobs(new float[] {-1f, -1f})
          .finishReason(FinishReason.LENGTH).weightVersion(loaded)
          .stats(dev.ravel.workers.engine.RequestStats.builder().arrivalEpochNanos(10).finishEpochNanos(20).build()).build())
          .toList();
    }

    @Override
    public List<GenerationResult> generateAsync(List<GenerationRequest> requests) {
      return generate(requests);
    }

    /** Ray restarted it between calls: no call fails, the next is served by the new process, built afresh. */
    void restartedByRay() {
      pid++;
      loaded = 0;
    }

    @Override
    public long updateWeights(ObjectRef<?> weights) {
      loaded = (Long) weights.get();
      log.add("load v" + loaded);
      return loaded;
    }

    @Override
    public EngineStats engineStats() {
      throw new UnsupportedOperationException();
    }

    @Override
    public long processId() {
      if (dead) {
        throw new RayActorException(1, "The actor is dead.", null);
      }
      if (unplaceable && deathsLeft.get() < 1) {
        try {
          released.await(60, java.util.concurrent.TimeUnit.SECONDS); // released by the test; bounded anyway
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return pid;
    }
  }

  /** A reward environment whose process dies under its first call. */
  static final class DyingReward extends RavelActor implements RewardEnvironment {
    final AtomicInteger calls = new AtomicInteger();
    volatile long pid = 500;

    @Override
    public dev.ravel.workers.reward.RewardScores score(List<Problem> problems, List<int[]> completions, long step) {
      if (calls.incrementAndGet() == 1) {
        pid++;
        throw new RayActorException(1, "The actor died unexpectedly before finishing this task.", null);
      }
      return dev.ravel.workers.reward.RewardScores.of(new double[completions.size()],
          java.util.Collections.nCopies(completions.size(), ""));
    }

    @Override
    public long processId() {
      return pid;
    }
  }

  private <I> RavelActorHandle<I> local(RavelActor actor, Class<I> role) {
    RavelActorHandle<I> h = RavelActorHandle.local(actor, role, 4);
    handles.add(h);
    return h;
  }

  private static List<GenerationRequest> requests(int n) {
    List<GenerationRequest> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(GenerationRequest.of("s1-r" + i, new int[] {3, 4}, SamplingParams.builder().maxTokens(2).seed(i).build(),
          null));
    }
    return out;
  }

  private Failover failover(int maxRestarts, DyingWorker... workers) {
    return failover(maxRestarts, Failover.RESTART_WAIT_MS, workers);
  }

  private Failover failover(int maxRestarts, long restartWaitMs, DyingWorker... workers) {
    List<RavelActorHandle<GenerationWorker>> w = new ArrayList<>();
    for (DyingWorker d : workers) {
      w.add(local(d, GenerationWorker.class));
    }
    Failover f = new Failover(spans, maxRestarts, w, local(new DyingReward(), RewardEnvironment.class), restartWaitMs);
    f.recordProcesses();
    return f;
  }

  private List<SpanData> named(String name) {
    return exported.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).toList();
  }

  @Test
  void generate_workerDiesUnderTheCall_restartedWorkerLoadsTheCurrentWeightsThenServesTheSameRequestsOnce() {
    DyingWorker dying = new DyingWorker(1);
    Failover f = failover(3, dying);
    f.weights(new Weights(7), 7);
    List<GenerationResult> results;
    String stepSpan;
    try (ScopedSpan step = spans.start(SpanGroup.GENERATION, SpanNames.VLLM_GENERATE)) {
      stepSpan = step.spanContext().getSpanId();
      results = f.generate(0, false, requests(3)).get();
    }

    assertThat(results).extracting(GenerationResult::requestId).containsExactly("s1-r0", "s1-r1", "s1-r2");
    assertThat(results).allSatisfy(r -> assertThat(r.weightVersion()).isEqualTo(7)); // not the initial 0
    assertThat(dying.log).containsExactly("generate [s1-r0, s1-r1, s1-r2] at v0", "load v7",
        "generate [s1-r0, s1-r1, s1-r2] at v7");
    FaultStats stats = f.stats();
    assertThat(stats.processes()).containsEntry("generation_worker/0", List.of(100L, 101L));
    assertThat(stats.restarts()).isEqualTo(1);
    assertThat(stats.failedCalls()).isEqualTo(1);
    assertThat(stats.retriedCalls()).isEqualTo(1);
    assertThat(stats.retriedRequests()).isEqualTo(3);

    SpanData failed = named(SpanNames.FAULT_FAILED_CALL).get(0);
    SpanData retry = named(SpanNames.FAULT_RETRY).get(0);
    assertThat(named(SpanNames.FAULT_FAILED_CALL)).hasSize(1);
    assertThat(named(SpanNames.FAULT_RETRY)).hasSize(1);
    assertThat(failed.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(failed.getEvents()).extracting(e -> e.getName()).contains("exception");
    assertThat(failed.getAttributes().get(RavelAttributes.FAULT_ACTOR)).isEqualTo("generation_worker/0");
    assertThat(failed.getAttributes().get(RavelAttributes.FAULT_DEAD_PID)).isEqualTo(100L);
    assertThat(failed.getAttributes().get(RavelAttributes.NUM_REQUESTS)).isEqualTo(3L);
    assertThat(failed.getStartEpochNanos()).isLessThanOrEqualTo(retry.getStartEpochNanos());
    // siblings under the generate span; the retried call runs under the retry
    assertThat(failed.getParentSpanId()).isEqualTo(stepSpan);
    assertThat(retry.getParentSpanId()).isEqualTo(stepSpan);
    assertThat(retry.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    assertThat(retry.getAttributes().get(RavelAttributes.FAULT_ATTEMPT)).isEqualTo(2L);
    assertThat(dying.parents).containsExactly(stepSpan, retry.getSpanId());
  }

  @Test
  void generate_noDeath_addsNoSpanAndCountsNothing() {
    Failover f = failover(3, new DyingWorker(0));
    assertThat(f.generate(0, true, requests(2)).get()).hasSize(2);
    assertThat(exported.getFinishedSpanItems()).isEmpty();
    assertThat(f.stats().restarts()).isZero();
    assertThat(f.stats().failedCalls()).isZero();
  }

  @Test
  void generate_diesMoreOftenThanRayRestartsIt_failsNamingTheActorAndTheKey() {
    DyingWorker dying = new DyingWorker(5);
    Failover f = failover(2, dying);
    assertThatThrownBy(() -> f.generate(0, false, requests(1)).get())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("generation_worker/0 died 3 times under one call (cluster.max_restarts=2)");
    assertThat(named(SpanNames.FAULT_FAILED_CALL)).hasSize(1);
    assertThat(named(SpanNames.FAULT_RETRY)).hasSize(2)
        .allSatisfy(s -> assertThat(s.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR));
    assertThat(f.stats().failedCalls()).isEqualTo(3);
    assertThat(f.stats().retriedCalls()).isEqualTo(2);
  }

  @Test
  void generate_withoutRestarts_failsAtOnceSayingSo() {
    Failover f = failover(0, new DyingWorker(1));
    assertThatThrownBy(() -> f.generate(0, false, requests(1)).get())
        .hasMessageStartingWith("generation_worker/0 died and is not restarted (cluster.max_restarts=0)");
    assertThat(f.stats().retriedCalls()).isZero();
  }

  @Test
  void generate_actorNotRestartedByRay_failsNamingTheActor() {
    DyingWorker dying = new DyingWorker(1);
    dying.restartable = false;
    Failover f = failover(3, 600, dying);
    long t0 = System.nanoTime();
    assertThatThrownBy(() -> f.generate(0, false, requests(1)).get())
        .hasMessageStartingWith("generation_worker/0 died and Ray did not restart it within 0.6 s"
            + " (cluster.node_loss_timeout_s;");
    assertThat(System.nanoTime() - t0).as("asked again until the wait ran out").isGreaterThan(500_000_000L);
  }

  @Test
  void generate_restartRayCannotPlace_failsAfterTheNodeLossTimeoutNamingTheActor() {
    DyingWorker dying = new DyingWorker(1);
    dying.unplaceable = true;
    Failover f = failover(3, 600, dying);
    try {
      assertThatThrownBy(() -> f.generate(0, false, requests(1)).get())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageStartingWith("generation_worker/0 died and Ray did not restart it within 0.6 s"
              + " (cluster.node_loss_timeout_s; no node left may take it")
          .hasMessageContaining("The actor died unexpectedly before finishing this task.");
      assertThat(f.stats().failedCalls()).isEqualTo(1);
      assertThat(f.stats().retriedCalls()).isZero(); // nothing was issued again: nothing counted twice
    } finally {
      dying.released.countDown();
    }
  }

  @Test
  void updateWeights_restartedBeforeTheCalls_itsRestartIsCountedAndLoadedOnce() {
    DyingWorker dying = new DyingWorker(0);
    Failover f = failover(3, dying);
    f.weights(new Weights(4), 4);
    dying.restartedByRay(); // died before the calls: both find the new process, neither fails
    assertThat(f.updateWeights(0, new Weights(4)).get()).isEqualTo(4L);
    assertThat(f.updateWeights(0, new Weights(4)).get()).isEqualTo(4L);
    assertThat(f.stats().processes().get("generation_worker/0")).containsExactly(100L, 101L);
    assertThat(f.stats().restarts()).isEqualTo(1);
    assertThat(f.stats().failedCalls()).isZero();
    dying.deathsLeft.set(2);
    f.generate(0, false, requests(1)).get();
    assertThat(f.stats().processes().get("generation_worker/0")).containsExactly(100L, 101L, 102L, 103L);
  }

  @Test
  void generate_restartedBeforeTheCallReachedIt_theAnswerUnderOlderWeightsCountsAsFailedAndGoesAgainLoaded() {
    DyingWorker dying = new DyingWorker(0);
    Failover f = failover(3, dying);
    f.weights(new Weights(7), 7);
    dying.restartedByRay(); // Ray restarted it before the call: the call does not fail, the new process serves v0
    String stepSpan;
    List<GenerationResult> results;
    try (ScopedSpan step = spans.start(SpanGroup.GENERATION, SpanNames.VLLM_GENERATE)) {
      stepSpan = step.spanContext().getSpanId();
      results = f.generate(0, true, requests(3)).get();
    }

    assertThat(results).allSatisfy(r -> assertThat(r.weightVersion()).isEqualTo(7));
    assertThat(dying.log).containsExactly("generate [s1-r0, s1-r1, s1-r2] at v0", "load v7",
        "generate [s1-r0, s1-r1, s1-r2] at v7");
    FaultStats stats = f.stats();
    assertThat(stats.processes()).containsEntry("generation_worker/0", List.of(100L, 101L));
    assertThat(stats.restarts()).isEqualTo(1);
    assertThat(stats.failedCalls()).isEqualTo(1);
    assertThat(stats.retriedCalls()).isEqualTo(1);
    assertThat(stats.retriedRequests()).isEqualTo(3);
    SpanData failed = named(SpanNames.FAULT_FAILED_CALL).get(0);
    assertThat(named(SpanNames.FAULT_FAILED_CALL)).hasSize(1);
    assertThat(named(SpanNames.FAULT_RETRY)).hasSize(1).allSatisfy(r -> assertThat(r.getParentSpanId()).isEqualTo(stepSpan));
    assertThat(failed.getParentSpanId()).isEqualTo(stepSpan);
    assertThat(failed.getAttributes().get(RavelAttributes.FAULT_DEAD_PID)).isEqualTo(100L);
    assertThat(failed.getEvents()).singleElement().satisfies(e -> assertThat(e.getAttributes().toString())
        .contains("restarted as pid 101 before this call reached it")
        .contains("answered under weight version 0, older than the current 7"));
  }

  @Test
  void generate_restartedBeforeTheCallBeforeAnyRefit_theAnswerStandsAndTheRestartIsCounted() {
    DyingWorker dying = new DyingWorker(0);
    Failover f = failover(3, dying);
    dying.restartedByRay(); // its new process serves the weights it was built with: the run's current ones

    assertThat(f.generate(0, false, requests(2)).get()).hasSize(2);

    assertThat(dying.log).containsExactly("generate [s1-r0, s1-r1] at v0");
    assertThat(f.stats().processes()).containsEntry("generation_worker/0", List.of(100L, 101L));
    assertThat(f.stats().restarts()).isEqualTo(1);
    assertThat(f.stats().failedCalls()).isZero();
    assertThat(f.stats().retriedCalls()).isZero();
    assertThat(exported.getFinishedSpanItems()).isEmpty();
  }

  @Test
  void score_rewardEnvironmentRestartedBeforeTheCall_theScoresStandAndTheRestartIsCounted() {
    DyingReward env = new DyingReward();
    env.calls.set(1); // does not die under a call
    Failover f = new Failover(spans, 1, List.of(), List.of(local(env, RewardEnvironment.class)));
    f.recordProcesses();
    env.pid++; // Ray restarted it before the call

    assertThat(f.score(List.of(new Problem("1+2=", "3")), List.of(new int[] {5}), 1).size()).isEqualTo(1);

    assertThat(env.calls).hasValue(2); // asked once
    assertThat(f.stats().processes()).containsEntry(Failover.REWARD, List.of(500L, 501L));
    assertThat(f.stats().failedCalls()).isZero();
  }

  @Test
  void score_rewardEnvironmentDies_isAskedAgainOnTheRestartedOne() {
    Failover f = failover(1, new DyingWorker(0));
    double[] r = f.score(List.of(new Problem("1+2=", "3")), List.of(new int[] {5}), 1).rewards();
    assertThat(r).hasSize(1);
    assertThat(f.stats().processes()).containsEntry(Failover.REWARD, List.of(500L, 501L));
    assertThat(f.stats().retriedRequests()).isZero(); // no generation requests in a score call
    assertThat(f.stats().retriedCalls()).isEqualTo(1);
  }

  @Test
  void score_twoRewardEnvironments_eachScoresItsShareInOrderAndOneThatDiesIsAskedAgain() {
    DyingReward first = new DyingReward();
    first.calls.set(1); // lives
    DyingReward second = new DyingReward();
    second.pid = 700;
    Failover f = new Failover(spans, 1, List.of(), List.of(local(first, RewardEnvironment.class),
        local(second, RewardEnvironment.class)));
    f.recordProcesses();
    List<Problem> problems = java.util.stream.IntStream.range(0, 5).mapToObj(i -> new Problem(i + "+0=", "" + i))
        .toList();

    dev.ravel.workers.reward.RewardScores s = f.score(problems, java.util.Collections.nCopies(5, new int[] {5}), 1);

    assertThat(s.size()).isEqualTo(5);
    assertThat(first.calls).hasValue(2);
    assertThat(second.calls).hasValue(2); // died under the first, scored on the restarted one
    assertThat(f.stats().processes()).containsEntry(Failover.REWARD + "/0", List.of(500L))
        .containsEntry(Failover.REWARD + "/1", List.of(700L, 701L));
  }

  @Test
  void plus_aRestartSeenByBothViews_countsOnce() {
    FaultStats a = new FaultStats(java.util.Map.of("generation_worker/0", List.of(1L, 2L)), 1, 1, 4);
    FaultStats b = new FaultStats(java.util.Map.of("generation_worker/0", List.of(1L, 2L),
        "reward_environment", List.of(9L)), 2, 2, 8);
    FaultStats sum = a.plus(b);
    assertThat(sum.restarts()).isEqualTo(1);
    assertThat(sum.failedCalls()).isEqualTo(3);
    assertThat(sum.retriedRequests()).isEqualTo(12);
    assertThat(sum.json()).containsEntry("restarts", 1L).containsKey("processes");
  }
}
