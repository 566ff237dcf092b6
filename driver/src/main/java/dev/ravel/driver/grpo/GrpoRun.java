package dev.ravel.driver.grpo;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.actor.RavelRef;
import dev.ravel.workers.buffer.BufferBatch;
import dev.ravel.workers.buffer.ReplayBuffer;
import dev.ravel.workers.buffer.ReplayBufferActor;
import dev.ravel.workers.buffer.Rollout;
import dev.ravel.workers.collector.CollectorSpec;
import dev.ravel.workers.collector.CollectorStats;
import dev.ravel.workers.collector.TrajectoryCollector;
import dev.ravel.workers.collector.TrajectoryCollectorActor;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.generation.GenerationWorkerActor;
import dev.ravel.workers.generation.GenerationWorkerSpec;
import dev.ravel.workers.generation.GroupRequests;
import dev.ravel.workers.grpo.Advantages;
import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.reward.RewardEnvironment;
import dev.ravel.workers.reward.RewardEnvironmentActor;
import dev.ravel.workers.task.ArithmeticTask;
import dev.ravel.workers.task.Problem;
import dev.ravel.workers.trainer.PolicyTrainer;
import dev.ravel.workers.trainer.PolicyTrainerActor;
import dev.ravel.workers.trainer.TrainOutcome;
import dev.ravel.workers.trainer.TrainerSpec;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.ray.api.ObjectRef;
import io.ray.api.Ray;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.Supplier;

/**
 * GRPO on Ray, sync or async, one trace per step (see DESIGN.md, "Span placement").
 *
 * <p>Sync step: data processing, refit (weights put once, the reference passed to every worker),
 * generation (one batched call per worker inside {@code rl.vllm.generate}), reward, policy and reference
 * log-probs, advantages, policy training, checkpointing.
 *
 * <p>Async step: the collector has been generating ahead; the step waits for its batch
 * ({@code rl.idle.buffer_starvation}), links to the {@code rl.vllm.generate} spans that produced it,
 * trains, then refits: pauses the collector ({@code rl.idle.refit_bubble}), updates the workers and
 * publishes the new version, under which the collector's next generation nests.
 */
public final class GrpoRun {
  private static final int MAX_LINKS = 128;

  private final DriverSession session;
  private final RunConfig config;
  private final StepListener listener;
  private final Spans spans;
  private final Tokenizer tokenizer = CharTokenizer.arithmetic();
  private final ArithmeticTask task = ArithmeticTask.standard();
  private final GrpoConfig grpo;
  private final SamplingParams sampling;
  private final int steps;
  private final int promptsPerStep;
  private final int groupSize;
  private final long seed;
  private final long maxAge;
  private final List<StepMetrics> history = new ArrayList<>();

  private List<RavelActorHandle<GenerationWorker>> workers;
  private RavelActorHandle<RewardEnvironment> reward;
  private RavelActorHandle<PolicyTrainer> trainer;
  private RavelActorHandle<ReplayBuffer> buffer;
  private RavelActorHandle<TrajectoryCollector> collector;
  private ModelWeights weights;
  private CollectorStats collectorStats;
  private SpanContext runContext = SpanContext.getInvalid();

  public GrpoRun(DriverSession session, RunConfig config, StepListener listener) {
    this.session = session;
    this.config = config;
    this.listener = listener;
    this.spans = session.spans();
    this.steps = config.integer("grpo.steps");
    this.promptsPerStep = config.integer("grpo.prompts_per_step");
    this.groupSize = config.integer("grpo.group_size");
    this.seed = config.longValue("run.seed");
    this.maxAge = config.integer("grpo.max_trajectory_age_steps");
    this.grpo = GrpoConfig.builder()
        .groupSize(groupSize)
        .promptsPerStep(promptsPerStep)
        .clipEpsilon(config.number("grpo.clip_epsilon"))
        .klBeta(config.number("grpo.kl_beta"))
        .learningRate(config.number("grpo.learning_rate"))
        .temperature(config.number("grpo.temperature"))
        .topP(config.number("grpo.top_p"))
        .maxNewTokens(config.integer("grpo.max_new_tokens"))
        .seed(seed)
        .build();
    this.sampling = SamplingParams.builder()
        .maxTokens(config.integer("grpo.max_new_tokens"))
        .temperature(config.number("grpo.temperature"))
        .topP(config.number("grpo.top_p"))
        .seed(seed)
        .build();
  }

  /** Creates the actors, runs every step and returns the history. */
  public List<StepMetrics> run() {
    runContext = io.opentelemetry.api.trace.Span.current().getSpanContext();
    boolean async = config.mode() == RunConfig.Mode.ASYNC;
    createActors(async);
    if (async) {
      runAsync();
    } else {
      runSync();
    }
    return List.copyOf(history);
  }

  public List<StepMetrics> history() {
    return List.copyOf(history);
  }

  /** The collector's counters at the end of an async run (null for sync). */
  public CollectorStats collectorStats() {
    return collectorStats;
  }

  /** Each generation worker's engine counters. */
  public List<EngineStats> engineStats() {
    List<EngineStats> out = new ArrayList<>();
    for (RavelActorHandle<GenerationWorker> w : workers) {
      out.add(w.call(GenerationWorker::engineStats).get());
    }
    return out;
  }

  private void createActors(boolean async) {
    ModelSpec spec = ModelSpec.tiny(tokenizer.vocabSize());
    weights = ModelWeights.init(spec, seed);
    GenerationWorkerSpec ws = new GenerationWorkerSpec(config.integer("generation.kv_token_budget"),
        config.integer("generation.max_running_requests"), "ravel-tiny", tokenizer.eos(), weights);
    workers = new ArrayList<>();
    int n = config.integer("generation.workers");
    for (int i = 0; i < n; i++) {
      workers.add(session.actor(GenerationWorkerActor::new, ws, GenerationWorker.class)
          .maxConcurrency(config.integer("generation.max_concurrency")).remote());
    }
    reward = session.actor(RewardEnvironmentActor::new, RewardEnvironment.class).remote();
    trainer = session.actor(PolicyTrainerActor::new, new TrainerSpec(weights, grpo), PolicyTrainer.class).remote();
    if (async) {
      buffer = session.actor(ReplayBufferActor::new, ReplayBuffer.class).maxConcurrency(4).remote();
      CollectorSpec cs = new CollectorSpec(workers, reward, buffer, promptsPerStep, groupSize, sampling, seed,
          (int) maxAge + 1, Math.max(1, Math.min(64, promptsPerStep * groupSize)));
      collector = session.actor(TrajectoryCollectorActor::new, cs, TrajectoryCollector.class)
          .maxConcurrency(4).remote();
    }
    // wait until every actor process is up, so that start-up is not charged to the first step
    List<RavelRef<?>> ready = new ArrayList<>();
    workers.forEach(w -> ready.add(w.call(GenerationWorker::engineStats)));
    ready.add(trainer.call(PolicyTrainer::weights));
    ready.add(reward.call(RewardEnvironment::telemetryStats));
    if (async) {
      ready.add(buffer.call(ReplayBuffer::stats));
      ready.add(collector.call(TrajectoryCollector::stats));
    }
    ready.forEach(RavelRef::get);
  }

  // ---------------------------------------------------------------- sync

  private void runSync() {
    for (int step = 0; step < steps; step++) {
      PhaseClock clock = new PhaseClock();
      long calls = 0;
      try (ScopedSpan s = startStep()) {
        s.set(RavelAttributes.STEP, step).set(RavelAttributes.ALGORITHM_MODE, "sync")
            .set(RavelAttributes.WEIGHT_VERSION, weights.version());
        int stepNo = step;
        List<Problem> problems = task.sample(promptsPerStep, new SplittableRandom(seed * 1_000_003L + stepNo));
        List<GenerationRequest> requests = phase(clock, "data_processing", SpanGroup.DATA,
            SpanNames.GRPO_DATA_PROCESSING, () -> requests(problems, stepNo));
        if (step > 0) {
          phase(clock, "refit", SpanGroup.REFIT, SpanNames.GRPO_REFIT, () -> refit(weights));
          calls += workers.size();
        }
        List<GenerationResult> results = phase(clock, "generation", SpanGroup.GENERATION, SpanNames.GRPO_GENERATION,
            () -> spans.call(SpanGroup.GENERATION, SpanNames.VLLM_GENERATE, g -> {
              g.set(RavelAttributes.GENERATION_MODE, "sync").set(RavelAttributes.WEIGHT_VERSION, weights.version())
                  .set(RavelAttributes.NUM_REQUESTS, requests.size());
              return generate(requests);
            }));
        calls += Math.min(workers.size(), requests.size());
        List<Problem> perRequest = new ArrayList<>();
        List<int[]> completions = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
          perRequest.add(problems.get(i / groupSize));
          completions.add(results.get(i).completionTokens());
        }
        double[] rewards = phase(clock, "reward", SpanGroup.REWARD, SpanNames.GRPO_REWARD,
            () -> reward.call(RewardEnvironment::score, perRequest, completions).get());
        calls++;
        List<Trajectory> batch = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
          GenerationResult r = succeeded(results.get(i));
          batch.add(new Trajectory(r.requestId(), r.promptTokens(), r.completionTokens(), r.logprobs(), rewards[i],
              r.weightVersion(), i % groupSize));
        }
        StepMetrics m = trainStep(clock, s, step, "sync", batch, 0, calls);
        record(s, m);
        history.add(m);
        listener.onStep(m, steps);
      }
    }
  }

  private List<GenerationRequest> requests(List<Problem> problems, int step) {
    return GroupRequests.of(problems, tokenizer, groupSize, sampling, step, new SplittableRandom(seed * 7_919L + step));
  }

  /** One batched call per worker (requests dealt round-robin), results back in request order. */
  private List<GenerationResult> generate(List<GenerationRequest> requests) {
    int w = workers.size();
    List<List<GenerationRequest>> chunks = new ArrayList<>();
    for (int i = 0; i < w; i++) {
      chunks.add(new ArrayList<>());
    }
    for (int i = 0; i < requests.size(); i++) {
      chunks.get(i % w).add(requests.get(i));
    }
    List<RavelRef<List<GenerationResult>>> refs = new ArrayList<>();
    for (int i = 0; i < w; i++) {
      if (!chunks.get(i).isEmpty()) {
        refs.add(workers.get(i).call(GenerationWorker::generate, chunks.get(i)));
      }
    }
    List<List<GenerationResult>> parts = new ArrayList<>();
    refs.forEach(r -> parts.add(r.get()));
    List<GenerationResult> out = new ArrayList<>(requests.size());
    for (int i = 0; i < requests.size(); i++) {
      out.add(parts.get(i % w).get(i / w));
    }
    return out;
  }

  /** Puts the weights in the object store once and passes the reference to every worker. */
  private Void refit(ModelWeights w) {
    ObjectRef<Payload<ModelWeights>> ref = Ray.put(Payload.of(w));
    List<RavelRef<Long>> refs = new ArrayList<>();
    for (RavelActorHandle<GenerationWorker> worker : workers) {
      refs.add(worker.call(GenerationWorker::updateWeights, ref));
    }
    for (RavelRef<Long> r : refs) {
      long v = r.get();
      if (v != w.version()) {
        throw new IllegalStateException("worker loaded weight version " + v + ", expected " + w.version());
      }
    }
    return null;
  }

  // ---------------------------------------------------------------- async

  private void runAsync() {
    try {
      for (int step = 0; step < steps; step++) {
        asyncStep(step);
      }
    } finally {
      // also when a step failed: no more generate calls while the session flushes and closes
      collectorStats = collector.call(TrajectoryCollector::stop).get();
    }
  }

  private void asyncStep(int step) {
    PhaseClock clock = new PhaseClock();
    long calls = 0;
    CollectorStats before = collector.call(TrajectoryCollector::stats).get();
    try (ScopedSpan s = startStep()) {
      s.set(RavelAttributes.STEP, step).set(RavelAttributes.ALGORITHM_MODE, "async")
          .set(RavelAttributes.WEIGHT_VERSION, weights.version());
      if (step == 0) {
        phase(clock, "refit", SpanGroup.REFIT, SpanNames.GRPO_REFIT,
            () -> collector.call(TrajectoryCollector::publish, weights.version()).get());
        calls++;
      }
      long stepNo = step;
      Gathered got = phase(clock, "idle", SpanGroup.IDLE, SpanNames.IDLE_BUFFER_STARVATION,
          () -> gather(stepNo, before.failures()));
      calls += got.calls;
      linkRollouts(s, got.rollouts);
      List<Trajectory> batch = phase(clock, "data_processing", SpanGroup.DATA, SpanNames.GRPO_DATA_PROCESSING,
          () -> flatten(got.rollouts));
      StepMetrics partial = trainStep(clock, s, step, "async", batch, got.droppedTrajectories, 0);
      if (step < steps - 1) { // after the last step nothing would train on newly published weights
        phase(clock, "refit", SpanGroup.REFIT, SpanNames.GRPO_REFIT, () -> {
          // the refit bubble: generation paused while the weights change (counted in the refit phase)
          spans.call(SpanGroup.IDLE, SpanNames.IDLE_REFIT_BUBBLE,
              x -> collector.call(TrajectoryCollector::pause, 60_000L).get());
          refit(weights);
          return collector.call(TrajectoryCollector::publish, weights.version()).get();
        });
        calls += 2 + workers.size();
      }
      CollectorStats after = collector.call(TrajectoryCollector::stats).get();
      long collectorCalls = (after.generateCalls() - before.generateCalls()) + (after.rewardCalls() - before.rewardCalls())
          + (after.bufferCalls() - before.bufferCalls());
      StepMetrics m = new StepMetrics(partial.step(), partial.mode(), partial.rewardMean(), partial.kl(), partial.loss(),
          partial.clipFraction(), partial.tokens(), partial.tokens() / Math.max(1e-9, clock.elapsed()),
          clock.elapsed(), clock.phases(), partial.weightVersion(), partial.trajectories(), partial.droppedForAge(),
          calls + partial.rayCalls() + collectorCalls, partial.traceId());
      history.add(m);
      record(s, m);
      listener.onStep(m, steps);
    }
  }

  private record Gathered(List<Rollout> rollouts, int droppedTrajectories, long calls) {}

  /**
   * Takes this step's groups from the buffer in short waits, failing fast with the collector's error when
   * it reports a failure instead of waiting out the whole starvation bound.
   */
  private Gathered gather(long step, long failuresBefore) {
    long deadline = System.nanoTime() + 600_000_000_000L;
    List<Rollout> rollouts = new ArrayList<>();
    int dropped = 0;
    long calls = 0;
    while (rollouts.size() < promptsPerStep) {
      BufferBatch b = buffer.call(ReplayBuffer::take, step, promptsPerStep - rollouts.size(), maxAge, 2_000L).get();
      calls++;
      rollouts.addAll(b.rollouts());
      dropped += b.droppedTrajectories();
      if (rollouts.size() >= promptsPerStep) {
        break;
      }
      CollectorStats c = collector.call(TrajectoryCollector::stats).get();
      if (c.failures() > failuresBefore) {
        throw new IllegalStateException("step " + step + ": the collector failed: " + c.lastError());
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("step " + step + ": only " + rollouts.size() + " of " + promptsPerStep
            + " groups arrived within 600 s");
      }
    }
    return new Gathered(rollouts, dropped, calls);
  }

  /** {@code r}, unless the engine failed or aborted it: then the step fails with the engine's reason. */
  static GenerationResult succeeded(GenerationResult r) {
    if (r.finishReason() == dev.ravel.workers.engine.FinishReason.ERROR
        || r.finishReason() == dev.ravel.workers.engine.FinishReason.ABORT) {
      throw new IllegalStateException("generation of " + r.requestId() + " ended " + r.finishReason().wireName()
          + (r.error() == null ? "" : ": " + r.error()));
    }
    return r;
  }

  private static List<Trajectory> flatten(List<Rollout> rollouts) {
    List<Trajectory> out = new ArrayList<>();
    rollouts.forEach(r -> out.addAll(r.trajectories()));
    return out;
  }

  /** Links the step to the {@code rl.vllm.generate} spans that produced its trajectories (at most 128). */
  private static void linkRollouts(ScopedSpan step, List<Rollout> rollouts) {
    Set<String> seen = new LinkedHashSet<>();
    for (Rollout r : rollouts) {
      for (String id : r.generateSpans()) {
        if (!id.isEmpty() && seen.size() < MAX_LINKS) {
          seen.add(id);
        }
      }
    }
    for (String id : seen) {
      String[] parts = id.split(":");
      step.link(SpanContext.createFromRemoteParent(parts[0], parts[1], TraceFlags.getSampled(), TraceState.getDefault()));
    }
  }

  // ---------------------------------------------------------------- shared

  private StepMetrics trainStep(PhaseClock clock, ScopedSpan s, int step, String mode, List<Trajectory> batch,
      int dropped, long callsSoFar) {
    phase(clock, "training", SpanGroup.TRAINING, SpanNames.GRPO_LOGPROBS,
        () -> trainer.call(PolicyTrainer::logprobs, batch).get());
    double[] rewards = batch.stream().mapToDouble(Trajectory::reward).toArray();
    phase(clock, "training", SpanGroup.TRAINING, SpanNames.GRPO_ADVANTAGE, () -> {
      // the trainer applies the same advantages; here they tell how many groups carry no signal
      double[] adv = Advantages.groupRelative(rewards, groupSize, grpo.advantageEps());
      int flat = 0;
      for (int g = 0; g + groupSize <= adv.length; g += groupSize) {
        boolean zero = true;
        for (int i = g; i < g + groupSize; i++) {
          zero &= adv[i] == 0.0;
        }
        flat += zero ? 1 : 0;
      }
      s.set(RavelAttributes.FLAT_GROUPS, (long) flat);
      return flat;
    });
    TrainOutcome out = phase(clock, "training", SpanGroup.TRAINING, SpanNames.GRPO_TRAINING,
        () -> trainer.call(PolicyTrainer::train, batch).get());
    weights = out.weights();
    int every = config.integer("grpo.checkpoint_every");
    if ((every > 0 && (step + 1) % every == 0) || step == steps - 1) {
      phase(clock, "checkpointing", SpanGroup.CHECKPOINT, SpanNames.GRPO_CHECKPOINT,
          () -> Checkpoints.save(session.config().runDir(), weights));
    }
    long tokens = batch.stream().mapToLong(t -> t.completion().length).sum();
    double gen = clock.seconds("generation");
    double rewardMean = java.util.Arrays.stream(rewards).average().orElse(0);
    StepMetrics m = new StepMetrics(step, mode, rewardMean, out.kl(), out.loss(), out.clipFraction(), tokens,
        gen > 0 ? tokens / gen : tokens / Math.max(1e-9, clock.elapsed()), clock.elapsed(), clock.phases(),
        weights.version(), batch.size(), dropped, callsSoFar + 2, s.spanContext().getTraceId());
    return m;
  }

  private static void record(ScopedSpan step, StepMetrics m) {
    step.set(RavelAttributes.REWARD_MEAN, m.rewardMean())
        .set(RavelAttributes.NUM_TRAJECTORIES, (long) m.trajectories())
        .set(RavelAttributes.DROPPED_TRAJECTORIES, (long) m.droppedForAge());
  }

  /**
   * A step's root span: every step is its own trace, also inside a submitted job, whose {@code rl.job.run}
   * span (current when the run started) the step links to instead of nesting under it.
   */
  private ScopedSpan startStep() {
    ScopedSpan s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP, io.opentelemetry.context.Context.root());
    return s.link(runContext);
  }

  private <T> T phase(PhaseClock clock, String phase, SpanGroup group, String span, Supplier<T> body) {
    return clock.time(phase, () -> spans.call(group, span, x -> body.get()));
  }
}
