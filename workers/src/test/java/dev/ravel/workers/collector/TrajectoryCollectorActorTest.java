package dev.ravel.workers.collector;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.buffer.BufferBatch;
import dev.ravel.workers.buffer.ReplayBuffer;
import dev.ravel.workers.buffer.ReplayBufferActor;
import dev.ravel.workers.buffer.Rollout;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.generation.GenerationWorkerActor;
import dev.ravel.workers.generation.GenerationWorkerSpec;
import dev.ravel.workers.generation.StepBatch;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.reward.RewardEnvironment;
import dev.ravel.workers.reward.RewardEnvironmentActor;
import dev.ravel.workers.task.ArithmeticTask;
import io.ray.api.ObjectRef;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The collector's logic on in-process actors: real engines, reward and buffer, no Ray. */
@Timeout(120)
final class TrajectoryCollectorActorTest {
  private static final int PROMPTS = 3;
  private static final int GROUP = 2;
  private static final long SEED = 11;
  private static final CharTokenizer TOKENIZER = CharTokenizer.arithmetic();
  private static final SamplingParams SAMPLING = SamplingParams.builder().maxTokens(4).temperature(1.0).topP(1.0)
      .seed(SEED).build();

  private final List<RavelActorHandle<?>> handles = new ArrayList<>();

  @AfterEach
  void release() {
    handles.forEach(RavelActorHandle::release);
  }

  private <I> RavelActorHandle<I> local(RavelActor actor, Class<I> role, int concurrency) {
    RavelActorHandle<I> h = RavelActorHandle.local(actor, role, concurrency);
    handles.add(h);
    return h;
  }

  private RavelActorHandle<GenerationWorker> engineWorker() {
    ModelWeights w = ModelWeights.init(ModelSpec.tiny(TOKENIZER.vocabSize()), SEED);
    GenerationWorkerSpec spec = new GenerationWorkerSpec(4096, 64, "ravel-tiny", TOKENIZER.eos(), w);
    return local(new GenerationWorkerActor(Payload.of(spec)), GenerationWorker.class, 16);
  }

  private Collected collector(List<RavelActorHandle<GenerationWorker>> workers, int lead) {
    return collector(workers, lead, (PROMPTS + workers.size() - 1) / workers.size());
  }

  private Collected collector(List<RavelActorHandle<GenerationWorker>> workers, int lead, int groupsPerCall) {
    RavelActorHandle<ReplayBuffer> buffer = local(new ReplayBufferActor(), ReplayBuffer.class, 4);
    RavelActorHandle<RewardEnvironment> reward = local(new RewardEnvironmentActor(), RewardEnvironment.class, 1);
    CollectorSpec spec = new CollectorSpec(workers, reward, buffer, PROMPTS, GROUP, SAMPLING, SEED, lead, 4,
        groupsPerCall, 0, 0);
    TrajectoryCollectorActor c = new TrajectoryCollectorActor(Payload.of(spec));
    return new Collected(c, buffer);
  }

  private record Collected(TrajectoryCollectorActor collector, RavelActorHandle<ReplayBuffer> buffer) {}

  @Test
  void publish_schedulesTheLeadAndEachTargetArrivesAsTheStepsBatch() {
    Collected c = collector(List.of(engineWorker(), engineWorker()), 2);
    try {
      assertThat(c.collector().publish(0, null)).isEqualTo(2);
      BufferBatch b = c.buffer().call(ReplayBuffer::take, 0L, PROMPTS, 1L, 60_000L).get();

      StepBatch planned = StepBatch.plan(ArithmeticTask.standard(), TOKENIZER, PROMPTS, GROUP, SAMPLING, SEED, 0);
      assertThat(b.rollouts()).hasSize(PROMPTS);
      assertThat(b.rollouts()).extracting(Rollout::problem).containsExactlyInAnyOrderElementsOf(planned.problems());
      List<String> ids = new ArrayList<>();
      for (Rollout r : b.rollouts()) {
        assertThat(r.targetVersion()).isZero();
        assertThat(r.weightVersion()).isZero();
        assertThat(r.trajectories()).extracting(Trajectory::groupIndex).containsExactly(0, 1);
        assertThat(r.generateSpans()).hasSize(GROUP); // telemetry is off here: links are NONE, but one per trajectory
        r.trajectories().forEach(t -> ids.add(t.requestId()));
      }
      assertThat(ids).containsExactlyInAnyOrderElementsOf(
          planned.requests().stream().map(GenerationRequest::requestId).toList());

      await(() -> c.collector().stats().targetsDone() == 2);
      CollectorStats s = c.collector().stop();
      assertThat(s.targetsDone()).isEqualTo(2);
      assertThat(s.groups()).isEqualTo(2L * PROMPTS);
      assertThat(s.trajectories()).isEqualTo(2L * PROMPTS * GROUP);
      // 3 groups over 2 workers: calls of 2 and 1 groups, each scored and pushed as it returns
      assertThat(s.generateCalls()).isEqualTo(2L * 2);
      assertThat(s.rewardCalls()).isEqualTo(2L * 2);
      assertThat(s.bufferCalls()).isEqualTo(2L * 2);
      assertThat(s.failures()).isZero();
      assertThat(s.inFlight()).isZero();
    } finally {
      c.collector().stop();
    }
  }

  @Test
  void generateTarget_aReturnedCallsGroupsReachTheBufferWhileAnotherCallStillRuns() throws Exception {
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    RavelActorHandle<GenerationWorker> slow = local(new HeldWorker(engineWorker(), release), GenerationWorker.class, 4);
    Collected c = collector(List.of(engineWorker(), slow), 1, 2); // groups 0-1 on the fast worker, 2 on the slow
    try {
      c.collector().publish(0, null);
      BufferBatch first = c.buffer().call(ReplayBuffer::take, 0L, 2, 1L, 60_000L).get();

      assertThat(first.rollouts()).hasSize(2); // the fast call's groups, while the slow call is held
      // the fast call leaves the in-flight count just after its groups reach the buffer; the held one cannot
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
      while (c.collector().stats().inFlight() != 1 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertThat(c.collector().stats().inFlight()).isEqualTo(1);
      release.countDown();
      BufferBatch rest = c.buffer().call(ReplayBuffer::take, 0L, 1, 1L, 60_000L).get();
      assertThat(rest.rollouts()).hasSize(1);
      StepBatch planned = StepBatch.plan(ArithmeticTask.standard(), TOKENIZER, PROMPTS, GROUP, SAMPLING, SEED, 0);
      assertThat(rest.rollouts().get(0).problem()).isEqualTo(planned.problems().get(2));
    } finally {
      release.countDown();
      c.collector().stop();
    }
  }

  /** A worker whose async calls wait until released, then generate on the real one. */
  public static final class HeldWorker extends RavelActor implements GenerationWorker {
    private final RavelActorHandle<GenerationWorker> real;
    private final java.util.concurrent.CountDownLatch release;

    HeldWorker(RavelActorHandle<GenerationWorker> real, java.util.concurrent.CountDownLatch release) {
      this.real = real;
      this.release = release;
    }

    @Override
    public List<GenerationResult> generate(List<GenerationRequest> requests) {
      return real.call(GenerationWorker::generate, requests).get();
    }

    @Override
    public List<GenerationResult> generateAsync(List<GenerationRequest> requests) {
      try {
        release.await(60, java.util.concurrent.TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return real.call(GenerationWorker::generateAsync, requests).get();
    }

    @Override
    public long updateWeights(ObjectRef<?> weights) {
      return 0;
    }

    @Override
    public EngineStats engineStats() {
      return null;
    }
  }

  @Test
  void publish_nextVersionSchedulesOnlyTheNewTargets() {
    Collected c = collector(List.of(engineWorker()), 2);
    try {
      assertThat(c.collector().publish(0, null)).isEqualTo(2); // targets 0 and 1
      assertThat(c.collector().publish(1, null)).isEqualTo(1); // target 2
    } finally {
      c.collector().stop();
    }
  }

  /** A generation worker whose engine is gone: every call fails. */
  public static final class BrokenWorker extends RavelActor implements GenerationWorker {
    @Override
    public List<GenerationResult> generate(List<GenerationRequest> requests) {
      throw new IllegalStateException("engine down");
    }

    @Override
    public List<GenerationResult> generateAsync(List<GenerationRequest> requests) {
      throw new IllegalStateException("engine down");
    }

    @Override
    public long updateWeights(ObjectRef<?> weights) {
      return 0;
    }

    @Override
    public EngineStats engineStats() {
      return null;
    }
  }

  @Test
  void generateFailure_isCountedWithItsReasonAndNothingReachesTheBuffer() {
    Collected c = collector(List.of(local(new BrokenWorker(), GenerationWorker.class, 4)), 1);
    try {
      c.collector().publish(0, null);
      await(() -> c.collector().stats().failures() == 1);

      CollectorStats s = c.collector().stats();
      assertThat(s.lastError()).isEqualTo("engine down");
      assertThat(s.groups()).isZero();
      assertThat(s.rewardCalls()).isZero();
      assertThat(s.bufferCalls()).isZero();
      assertThat(c.buffer().call(ReplayBuffer::stats).get().pushed()).isZero();
    } finally {
      c.collector().stop();
    }
  }

  @Test
  void pause_waitsForInFlightCallsAndReturnsHowManyAreLeft() {
    Collected c = collector(List.of(engineWorker()), 1);
    try {
      c.collector().publish(0, null);
      assertThat(c.collector().pause(60_000)).isZero();
      assertThat(c.collector().stats().inFlight()).isZero();
    } finally {
      c.collector().stop();
    }
  }

  private static void await(BooleanSupplier condition) {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met within 60 s");
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}
