package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.context.SpanLink;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.buffer.ReplayBuffer;
import dev.ravel.workers.buffer.ReplayBufferActor;
import dev.ravel.workers.buffer.Rollout;
import dev.ravel.workers.collector.CollectorSpec;
import dev.ravel.workers.collector.TrajectoryCollector;
import dev.ravel.workers.collector.TrajectoryCollectorActor;
import dev.ravel.workers.fault.Failover;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.generation.GenerationWorkerActor;
import dev.ravel.workers.generation.GenerationWorkerSpec;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.reward.RewardEnvironment;
import dev.ravel.workers.reward.RewardEnvironmentActor;
import dev.ravel.workers.task.ArithmeticTask;
import dev.ravel.workers.task.Problem;
import dev.ravel.workers.trainer.PolicyTrainer;
import dev.ravel.workers.trainer.PolicyTrainerActor;
import dev.ravel.workers.trainer.TrainerSpec;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sync and async loops on in-process actors (real engines, reward, trainer, buffer and collector; no
 * Ray), for one step or many: a refit puts the weights in an in-process {@link ObjectStore} in place of
 * Ray's. Driver spans go to an in-memory exporter; the actors' own telemetry is off.
 */
@Timeout(180)
final class GrpoLoopsTest {
  private static final int PROMPTS = 4;
  private static final int GROUP = 2;
  private static final int WORKERS = 2;

  private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private final OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
      .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter))
          .setSpanLimits(io.opentelemetry.sdk.trace.SpanLimits.builder()
              .setMaxNumberOfLinks(dev.ravel.telemetry.sdk.ProcessTelemetry.MAX_LINKS).build()) // as every process
          .build())
      .build();
  private final Spans spans = Spans.create(otel, EnumSet.allOf(SpanGroup.class));
  private final CharTokenizer tokenizer = CharTokenizer.arithmetic();
  private final List<RavelActorHandle<?>> handles = new ArrayList<>();
  private final List<StepRecord> reported = new ArrayList<>();

  @TempDir
  Path runDir;

  @AfterEach
  void tearDown() {
    handles.forEach(RavelActorHandle::release);
    otel.close();
  }

  private <I> RavelActorHandle<I> local(RavelActor actor, Class<I> role, int concurrency) {
    RavelActorHandle<I> h = RavelActorHandle.local(actor, role, concurrency);
    handles.add(h);
    return h;
  }

  private GrpoSettings settings(String mode, String... more) {
    List<String> overrides = new ArrayList<>(List.of("run.mode=" + mode, "grpo.steps=1",
        "grpo.prompts_per_step=" + PROMPTS, "grpo.group_size=" + GROUP, "generation.workers=" + WORKERS));
    overrides.addAll(List.of(more));
    return GrpoSettings.from(RunConfig.load(null, overrides, Map.of()));
  }

  /** A reward environment that is down. */
  static final class FailingReward extends RavelActor implements RewardEnvironment {
    @Override
    public dev.ravel.workers.reward.RewardScores score(List<Problem> problems, List<int[]> completions, long step) {
      throw new IllegalStateException("reward service down");
    }
  }

  /** A generation worker that records the requests it was given and answers each with one token. */
  static final class RecordingWorker extends RavelActor implements GenerationWorker {
    final List<String> seen = java.util.Collections.synchronizedList(new ArrayList<>());

    @Override
    public List<GenerationResult> generate(List<dev.ravel.workers.engine.GenerationRequest> requests) {
      List<GenerationResult> out = new ArrayList<>();
      for (dev.ravel.workers.engine.GenerationRequest r : requests) {
        seen.add(r.requestId());
        out.add(GenerationResult.builder().requestId(r.requestId()).promptTokens(r.promptTokens())
            .completionTokens(new int[] {1}).logprobs(new float[] {-0.5f})
            .finishReason(dev.ravel.workers.engine.FinishReason.LENGTH).weightVersion(0)
            .stats(dev.ravel.workers.engine.RequestStats.builder().arrivalEpochNanos(1).finishEpochNanos(2).build())
            .traced(false).build());
      }
      return out;
    }

    @Override
    public List<GenerationResult> generateAsync(List<dev.ravel.workers.engine.GenerationRequest> requests) {
      return generate(requests);
    }

    @Override
    public long updateWeights(io.ray.api.ObjectRef<?> weights) {
      throw new UnsupportedOperationException();
    }

    @Override
    public dev.ravel.workers.engine.EngineStats engineStats() {
      return dev.ravel.workers.engine.EngineStats.builder().build();
    }
  }

  @Test
  void syncStep_rewardClass_scoresEveryCompletionWithYourFunction() {
    GrpoSettings s = settings("sync", "reward.class=" + QuarterReward.class.getName());
    ModelWeights w = initial(s);
    GrpoActors actors = actors(s, w);

    new SyncLoop(s, actors, new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps(s),
        ArithmeticTask.standard(), tokenizer, w).run();

    StepRecord m = reported.get(0);
    assertThat(m.rewardMean()).isEqualTo(0.25);
    assertThat(m.rewardStd()).isZero();
  }

  @Test
  void generate_dealsWholeGroupsToTheWorkersAndAnswersInRequestOrder() {
    GrpoSettings s = settings("sync", "grpo.prompts_per_step=5", "grpo.group_size=3");
    GrpoActors ok = actors(s, initial(s));
    RecordingWorker a = new RecordingWorker();
    RecordingWorker b = new RecordingWorker();
    List<RavelActorHandle<GenerationWorker>> two = List.of(local(a, GenerationWorker.class, 1),
        local(b, GenerationWorker.class, 1));
    GrpoActors actors = new GrpoActors(two, ok.rewards, ok.trainer, null, null, new Failover(spans, 0, two, ok.rewards),
        LocalRef::new);
    dev.ravel.workers.generation.StepBatch batch = dev.ravel.workers.generation.StepBatch.plan(
        ArithmeticTask.standard(), tokenizer, 5, 3, s.sampling(), s.seed(), 0);

    List<GenerationResult> results = actors.generate(batch.requests(), 3);

    assertThat(results).extracting(GenerationResult::requestId)
        .containsExactlyElementsOf(batch.requests().stream().map(r -> r.requestId()).toList());
    // groups 0, 2, 4 to the first worker and 1, 3 to the second, each whole (one n=3 request over HTTP)
    List<String> ids = batch.requests().stream().map(r -> r.requestId()).toList();
    assertThat(a.seen).containsExactlyElementsOf(concat(ids.subList(0, 3), ids.subList(6, 9), ids.subList(12, 15)));
    assertThat(b.seen).containsExactlyElementsOf(concat(ids.subList(3, 6), ids.subList(9, 12)));
    assertThat(actors.generateCalls(15, 3)).isEqualTo(2);
    assertThat(actors.generateCalls(3, 3)).isEqualTo(1);
  }

  @SafeVarargs
  private static List<String> concat(List<String>... parts) {
    List<String> out = new ArrayList<>();
    for (List<String> p : parts) {
      out.addAll(p);
    }
    return out;
  }

  /** A trainer whose process dies under its update. */
  static final class DyingTrainer extends RavelActor implements PolicyTrainer {
    @Override
    public dev.ravel.workers.trainer.LogProbSummary logprobs(List<Trajectory> batch) {
      return new dev.ravel.workers.trainer.LogProbSummary(0, 0, 0, 0);
    }

    @Override
    public dev.ravel.workers.trainer.TrainOutcome train(List<Trajectory> batch) {
      throw new io.ray.api.exception.RayActorException(1, "127.0.0.1", new IllegalStateException(
          "The actor died unexpectedly before finishing this task.\n\tclass_name: RavelActor"));
    }

    @Override
    public ModelWeights weights() {
      throw new UnsupportedOperationException();
    }

    @Override
    public String publishFile(String dir) {
      throw new UnsupportedOperationException();
    }

    @Override
    public String checkpoint(String dir) {
      throw new UnsupportedOperationException();
    }

    @Override
    public String rendezvous() {
      throw new UnsupportedOperationException();
    }

    @Override
    public int joinGroup(String address) {
      return 1;
    }
  }

  @Test
  void syncStep_twoTrainerRanks_everyRankTakesEveryUpdate() {
    GrpoSettings s = settings("sync");
    ModelWeights w = initial(s);
    GrpoActors ok = actors(s, w);
    RavelActorHandle<PolicyTrainer> second =
        local(new PolicyTrainerActor(Payload.of(new TrainerSpec(w, s.grpo()))), PolicyTrainer.class, 1);
    GrpoActors actors = withTrainers(ok, List.of(ok.trainer, second));
    TrainPhase phase = new TrainPhase(actors.trainers, s, runDir, java.util.Map.of(), tokenizer.eos());

    new SyncLoop(s, actors, phase, steps(s), ArithmeticTask.standard(), tokenizer, w).run();

    // every rank took every update (both at the last version, with the same weights: Java trainers are exact)
    ModelWeights first = actors.trainers.get(0).call(PolicyTrainer::weights).get();
    ModelWeights other = second.call(PolicyTrainer::weights).get();
    assertThat(first.version()).isEqualTo(other.version()).isEqualTo(s.steps());
    assertThat(other.sha256()).isEqualTo(first.sha256());
    assertThat(phase.rayCalls(0)).isEqualTo(2 * 2 + (s.checkpointAfter(0) ? 1 : 0));
  }

  @Test
  void syncStep_aTrainerRankDies_theRunStopsInOneLineNamingTheRank() {
    GrpoSettings s = settings("sync");
    ModelWeights w = initial(s);
    GrpoActors ok = actors(s, w);
    RavelActorHandle<PolicyTrainer> dying = local(new DyingTrainer(), PolicyTrainer.class, 1);
    GrpoActors actors = withTrainers(ok, List.of(ok.trainer, dying));

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new SyncLoop(s, actors,
        new TrainPhase(actors.trainers, s, runDir, java.util.Map.of(), tokenizer.eos()), steps(s),
        ArithmeticTask.standard(), tokenizer, w).run())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("step 1: the policy trainer's process died (rank 1 of 2: ")
        .hasMessageEndingWith("); the run can go on from its last checkpoint with --resume")
        .hasMessageNotContaining("\n");
  }

  /** A trainer rank whose process is gone: every call to it fails as Ray fails a call to a dead actor. */
  static final class DeadRank extends RavelActor implements PolicyTrainer {
    private static io.ray.api.exception.RayActorException dead() {
      return new io.ray.api.exception.RayActorException(1, "127.0.0.1", new IllegalStateException(
          "The actor died because its node has died.\n\tclass_name: PolicyTrainer"));
    }

    @Override
    public long processId() {
      throw dead();
    }

    @Override
    public dev.ravel.workers.trainer.LogProbSummary logprobs(List<Trajectory> batch) {
      throw dead();
    }

    @Override
    public dev.ravel.workers.trainer.TrainOutcome train(List<Trajectory> batch) {
      throw dead();
    }

    @Override
    public ModelWeights weights() {
      throw dead();
    }

    @Override
    public String publishFile(String dir) {
      throw dead();
    }

    @Override
    public String checkpoint(String dir) {
      throw dead();
    }

    @Override
    public String rendezvous() {
      throw dead();
    }

    @Override
    public int joinGroup(String address) {
      throw dead();
    }
  }

  @Test
  void refit_failsWhileATrainerRankIsDead_isTheLineNamingTheStepAndTheRank() {
    GrpoSettings s = settings("sync");
    ModelWeights w = initial(s);
    GrpoActors ok = actors(s, w);
    RavelActorHandle<PolicyTrainer> dead = local(new DeadRank(), PolicyTrainer.class, 1);
    TrainPhase phase = new TrainPhase(List.of(ok.trainer, dead), s, runDir, java.util.Map.of(), tokenizer.eos());
    IllegalStateException fetch = new IllegalStateException("generation worker 0 could not fetch the weights");

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> phase.refit(2, () -> {
      throw fetch;
    }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("step 3: the policy trainer's process died (rank 1 of 2: ")
        .hasMessageEndingWith("); the run can go on from its last checkpoint with --resume")
        .hasMessageNotContaining("\n")
        .satisfies(e -> assertThat(e.getSuppressed()).containsExactly(fetch));
  }

  @Test
  void refit_failsWithEveryTrainerRankAlive_isTheRefitsOwnError() {
    GrpoSettings s = settings("sync");
    ModelWeights w = initial(s);
    GrpoActors ok = actors(s, w);
    TrainPhase phase = new TrainPhase(List.of(ok.trainer), s, runDir, java.util.Map.of(), tokenizer.eos());
    IllegalStateException fetch = new IllegalStateException("generation worker 0 could not fetch the weights");

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> phase.refit(0, () -> {
      throw fetch;
    })).isSameAs(fetch);
    assertThat(phase.refit(0, () -> 3)).isEqualTo(3);
  }

  @Test
  void syncSteps_phaseHook_isToldEachPhaseOfEachStepBeforeItsSpanOpens() {
    GrpoSettings s = settings("sync", "grpo.steps=2");
    ModelWeights w = initial(s);
    GrpoActors actors = actors(s, w);
    Steps steps = steps(s);
    List<String> told = new ArrayList<>();
    steps.phaseHook((step, phase) -> {
      // the phase's span of this step has not opened yet (the hook may hold the step before it)
      long open = exporter.getFinishedSpanItems().stream().filter(x -> x.getName().equals(phase.spanName())).count();
      told.add(step + " " + phase.label() + " " + open);
    });

    new SyncLoop(s, actors, new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps,
        ArithmeticTask.standard(), tokenizer, w).run();

    assertThat(told).containsExactly("1 data 0", "1 gen 0", "1 reward 0", "1 logprobs 0", "1 adv 0", "1 train 0",
        "2 data 1", "2 refit 0", "2 gen 1", "2 reward 1", "2 logprobs 1", "2 adv 1", "2 train 1", "2 ckpt 0");
  }

  @Test
  void syncStep_theTrainerDies_theRunStopsWithOneLineNamingTheStepAndResume() {
    GrpoSettings s = settings("sync");
    ModelWeights w = initial(s);
    GrpoActors ok = actors(s, w);
    RavelActorHandle<PolicyTrainer> dying = local(new DyingTrainer(), PolicyTrainer.class, 1);
    GrpoActors actors = withTrainers(ok, List.of(dying));

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new SyncLoop(s, actors,
        new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps(s), ArithmeticTask.standard(), tokenizer, w)
        .run())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("step 1: the policy trainer's process died (")
        .hasMessageEndingWith("); the run can go on from its last checkpoint with --resume")
        .hasMessageNotContaining("\n"); // one line, Ray's multi-line text cut to its first
    assertThat(only(SpanNames.GRPO_STEP).getStatus().getStatusCode()).isEqualTo(io.opentelemetry.api.trace.StatusCode.ERROR);
  }

  @Test
  void syncStep_aFailedPhaseMarksItsSpanAndTheStepErrorWithTheException() {
    GrpoSettings s = settings("sync");
    ModelWeights w = initial(s);
    GrpoActors ok = actors(s, w);
    RavelActorHandle<RewardEnvironment> failing = local(new FailingReward(), RewardEnvironment.class, 1);
    GrpoActors actors = new GrpoActors(ok.workers, List.of(failing), ok.trainer, null, null,
        new Failover(spans, 0, ok.workers, List.of(failing)), LocalRef::new);

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new SyncLoop(s, actors,
        new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps(s), ArithmeticTask.standard(), tokenizer, w).run())
        .hasMessageContaining("reward service down");

    for (String name : List.of(SpanNames.GRPO_STEP, Phase.REWARD.spanName())) {
      SpanData d = only(name);
      assertThat(d.getStatus().getStatusCode()).as(name).isEqualTo(io.opentelemetry.api.trace.StatusCode.ERROR);
      assertThat(d.getEvents()).as(name).extracting(io.opentelemetry.sdk.trace.data.EventData::getName)
          .contains("exception");
    }
    assertThat(exporter.getFinishedSpanItems()).extracting(SpanData::getName).doesNotContain(SpanNames.GRPO_TRAINING);
  }

  @Test
  void syncStep_klBetaZeroSkipsTheReferencePassAndItsCall() {
    GrpoSettings s = settings("sync", "grpo.kl_beta=0");
    ModelWeights w = initial(s);
    GrpoActors actors = actors(s, w);

    new SyncLoop(s, actors, new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps(s), ArithmeticTask.standard(), tokenizer,
        w).run();

    StepRecord m = reported.get(0);
    assertThat(m.rayCalls()).isEqualTo(WORKERS + 1 + 2); // generate per worker, reward, train, checkpoint (last step)
    assertThat(exporter.getFinishedSpanItems()).extracting(SpanData::getName)
        .contains(SpanNames.GRPO_TRAINING).doesNotContain(SpanNames.GRPO_LOGPROBS, "rl.trainer.logprobs");
    assertThat(m.kl()).isZero();
    assertThat(m.weightVersion()).isEqualTo(w.version() + 1);
  }

  @Test
  void syncStep_twoRewardWorkersShareTheBatchAndTheStepKeepsItsSamples() throws Exception {
    GrpoSettings s = settings("sync", "reward.workers=2");
    ModelWeights w = initial(s);
    GrpoActors actors = actors(s, w);
    Steps steps = new Steps(spans, SpanContext.getInvalid(), (m, total) -> reported.add(m), s,
        new StepLog(runDir, io.opentelemetry.api.OpenTelemetry.noop().getMeter("test"), 3));

    new SyncLoop(s, actors, new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps,
        ArithmeticTask.standard(), tokenizer, w).run();

    StepRecord m = reported.get(0);
    assertThat(actors.rewards).hasSize(2);
    assertThat(m.rayCalls()).isEqualTo(WORKERS + 2 + 3); // generate per worker, a reward call each, train phase
    assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP);
    assertThat(m.rewards().components()).isEmpty(); // the digit task's reward has no components
    assertThat(m.rewards().failed()).isZero();
    List<dev.ravel.telemetry.runs.SampleRecord> samples = java.nio.file.Files.readAllLines(
        runDir.resolve(dev.ravel.telemetry.runs.SampleRecord.FILE)).stream()
        .map(dev.ravel.telemetry.runs.SampleRecord::parse).toList();
    assertThat(samples).hasSize(3).allSatisfy(x -> {
      assertThat(x.step()).isEqualTo(1);
      assertThat(x.prompt()).matches("[0-9]\\+[0-9]=");
      // the reward the step trained on is the task's for the text the reward environment read
      String[] ab = x.prompt().replace("=", "").split("\\+");
      int sum = Integer.parseInt(ab[0]) + Integer.parseInt(ab[1]);
      assertThat(x.answer()).isEqualTo(Integer.toString(sum));
      assertThat(x.reward()).isEqualTo(x.completion().equals(x.answer()) ? 1.0 : 0.0);
      assertThat(x.tokens()).isPositive();
    });
    assertThat(samples).extracting(dev.ravel.telemetry.runs.SampleRecord::group).doesNotHaveDuplicates();
  }

  /** {@code ok}'s workers and rewards (sync) with these trainer ranks instead of its trainer. */
  private GrpoActors withTrainers(GrpoActors ok, List<RavelActorHandle<PolicyTrainer>> trainers) {
    return new GrpoActors(ok.workers, ok.rewards, trainers, null, null, new Failover(spans, 0, ok.workers, ok.rewards),
        LocalRef::new);
  }

  private GrpoActors actors(GrpoSettings s, ModelWeights w) {
    List<RavelActorHandle<GenerationWorker>> workers = new ArrayList<>();
    for (int i = 0; i < s.workers(); i++) {
      GenerationWorkerSpec ws = new GenerationWorkerSpec(s.kvTokenBudget(), s.maxRunningRequests(), "ravel-tiny",
          tokenizer.eos(), w);
      workers.add(local(new GenerationWorkerActor(Payload.of(ws)), GenerationWorker.class, s.maxConcurrency()));
    }
    List<RavelActorHandle<RewardEnvironment>> rewards = new ArrayList<>();
    for (int i = 0; i < s.reward().workers(); i++) {
      rewards.add(local(new RewardEnvironmentActor(Payload.of(s.reward().javaClass())), RewardEnvironment.class, 1));
    }
    RavelActorHandle<PolicyTrainer> trainer =
        local(new PolicyTrainerActor(Payload.of(new TrainerSpec(w, s.grpo()))), PolicyTrainer.class, 1);
    RavelActorHandle<ReplayBuffer> buffer = null;
    RavelActorHandle<TrajectoryCollector> collector = null;
    if (s.async()) {
      buffer = local(new ReplayBufferActor(), ReplayBuffer.class, 4);
      CollectorSpec cs = new CollectorSpec(workers, rewards, buffer, s.promptsPerStep(), s.groupSize(),
          s.sampling(), s.seed(), (int) s.maxAge() + 1, 8, s.groupsPerCall(), 0, 0, null);
      collector = local(new TrajectoryCollectorActor(Payload.of(cs)), TrajectoryCollector.class, 4);
    }
    return new GrpoActors(workers, rewards, trainer, buffer, collector, new Failover(spans, 0, workers, rewards),
        LocalRef::new);
  }

  /** An object "in the store": the value itself, carried by the reference (in-process calls copy it). */
  record LocalRef(Object value) implements io.ray.api.ObjectRef<Object>, java.io.Serializable {
    @Override
    public Object get() {
      return value;
    }

    @Override
    public Object get(long timeoutMs) {
      return value;
    }
  }

  private ModelWeights initial(GrpoSettings s) {
    return ModelWeights.init(s.javaModel(), s.seed());
  }

  private Steps steps(GrpoSettings s) {
    return new Steps(spans, SpanContext.getInvalid(), (m, total) -> reported.add(m), s);
  }

  @Test
  void syncStep_phasesNestUnderTheStepWithTheirBucketsAndCountsAddUp() {
    GrpoSettings s = settings("sync");
    ModelWeights w = initial(s);
    GrpoActors actors = actors(s, w);
    Steps steps = steps(s);

    new SyncLoop(s, actors, new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps, ArithmeticTask.standard(), tokenizer, w)
        .run();

    assertThat(reported).hasSize(1);
    StepRecord m = reported.get(0);
    assertThat(m.mode()).isEqualTo("sync");
    assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP);
    assertThat(m.weightVersion()).isEqualTo(w.version() + 1);
    assertThat(m.rayCalls()).isEqualTo(WORKERS + 1 + 3 /* log-probs, train, checkpoint */); // no refit before step 0
    assertThat(m.phases()).containsOnlyKeys("data", "generation", "reward", "training", "checkpoint");
    assertThat(m.tokens()).isPositive();
    // completion lengths add up to the step's tokens; a completion is cut only at the token budget
    assertThat(m.completions().meanTokens() * m.trajectories()).isCloseTo((double) m.tokens(),
        org.assertj.core.data.Offset.offset(1e-6));
    assertThat(m.completions().maxTokens()).isBetween(1, s.sampling().maxTokens());
    assertThat(m.completions().clipped()).isBetween(0, m.trajectories());
    assertThat(steps.history()).containsExactly(m);

    SpanData root = only(SpanNames.GRPO_STEP);
    assertThat(root.getAttributes().get(RavelAttributes.ALGORITHM_MODE)).isEqualTo("sync");
    assertThat(root.getAttributes().get(RavelAttributes.NUM_TRAJECTORIES)).isEqualTo((long) PROMPTS * GROUP);
    assertThat(root.getAttributes().get(RavelAttributes.COMPLETIONS_CLIPPED)).isEqualTo((long) m.completions().clipped());
    assertThat(root.getTraceId()).isEqualTo(m.traceId());
    List<SpanData> children = childrenOf(root);
    assertThat(children).extracting(SpanData::getName).containsExactly(Phase.DATA_PROCESSING.spanName(),
        Phase.GENERATION.spanName(), Phase.REWARD.spanName(), Phase.LOGPROBS.spanName(), Phase.ADVANTAGE.spanName(),
        Phase.TRAINING.spanName(), Phase.CHECKPOINTING.spanName());
    assertThat(children).allSatisfy(c -> assertThat(c.getAttributes().get(RavelAttributes.BUCKET))
        .isEqualTo(Phase.ofSpanName(c.getName()).orElseThrow().bucket().value()));
    SpanData generate = only(SpanNames.VLLM_GENERATE);
    assertThat(generate.getParentSpanId()).isEqualTo(only(SpanNames.GRPO_GENERATION).getSpanId());
    assertThat(generate.getAttributes().get(RavelAttributes.NUM_REQUESTS)).isEqualTo((long) PROMPTS * GROUP);
    // the last step's checkpoint: the trainer's state (weights and optimizer), completed by its meta file
    Checkpoints.Found ckpt = Checkpoints.latest(runDir).orElseThrow();
    assertThat(ckpt.dir().getFileName().toString()).isEqualTo("step-000001");
    assertThat(ckpt.meta().step()).isEqualTo(1);
    assertThat(ckpt.meta().weightVersion()).isEqualTo(m.weightVersion());
    dev.ravel.workers.grpo.TrainerState saved = dev.ravel.workers.trainer.TrainerStateFile.read(ckpt.trainerFile());
    assertThat(saved.weights().version()).isEqualTo(m.weightVersion());
    assertThat(saved.optimizer().steps()).isEqualTo(1);
    assertThat(ckpt.meta().weightsSha256()).isEqualTo(saved.weights().sha256()).hasSize(64);
  }

  @Test
  void asyncStep_trainsOnTheCollectorsBatchWaitingAsIdleAndDoesNotRefitAfterTheLastStep() {
    GrpoSettings s = settings("async");
    ModelWeights w = initial(s);
    GrpoActors actors = actors(s, w);
    Steps steps = steps(s);
    AsyncLoop loop = new AsyncLoop(s, actors, new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps, w);

    loop.run();

    assertThat(reported).hasSize(1);
    StepRecord m = reported.get(0);
    assertThat(m.mode()).isEqualTo("async");
    assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP);
    assertThat(m.droppedForAge()).isZero();
    assertThat(m.phases()).containsKeys("refit", "idle", "data", "training");
    assertThat(loop.collectorStats()).isNotNull();
    assertThat(loop.collectorStats().failures()).isZero();
    assertThat(loop.collectorStats().trajectories()).isGreaterThanOrEqualTo(PROMPTS * GROUP);
    // publish, the takes, log-probs and update, and the collector's calls that made this step's batch: one
    // generate, one reward and one push per chunk (the groups split evenly over the workers: WORKERS chunks), all
    // between the step's start and the take that returned them. How far the collector has run ahead for the next
    // target by the time the step ends is up to the machine's speed, so it is not counted on.
    assertThat(m.rayCalls()).isGreaterThanOrEqualTo(1 + 1 + 2 /* log-probs, train */ + 3L * WORKERS);

    SpanData root = only(SpanNames.GRPO_STEP);
    assertThat(childrenOf(root)).extracting(SpanData::getName).containsExactly(Phase.REFIT.spanName(),
        Phase.BUFFER_STARVATION.spanName(), Phase.DATA_PROCESSING.spanName(), Phase.LOGPROBS.spanName(),
        Phase.ADVANTAGE.spanName(), Phase.TRAINING.spanName(), Phase.CHECKPOINTING.spanName());
    assertThat(only(Phase.BUFFER_STARVATION.spanName()).getAttributes().get(RavelAttributes.BUCKET)).isEqualTo("idle");
    assertThat(names()).doesNotContain(Phase.REFIT_BUBBLE.spanName());
  }

  @Test
  void syncSteps_manyStepsEachRefitsTheWorkersWithTheVersionBeforeItAndTrainsOnAFullBatch() {
    GrpoSettings s = settings("sync", "grpo.steps=5");
    ModelWeights w = initial(s);
    GrpoActors actors = actors(s, w);

    new SyncLoop(s, actors, new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps(s),
        ArithmeticTask.standard(), tokenizer, w).run();

    assertThat(reported).hasSize(5);
    for (int i = 0; i < 5; i++) {
      StepRecord m = reported.get(i);
      assertThat(m.step()).isEqualTo(i + 1);
      assertThat(m.weightVersion()).as("step %d trains version %d into %d", i + 1, w.version() + i, w.version() + i + 1)
          .isEqualTo(w.version() + i + 1);
      assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP);
      // a refit before every step but the first (the workers start from the initial weights)
      assertThat(m.phases().containsKey("refit")).as("step %d refit", i + 1).isEqualTo(i > 0);
    }
    assertThat(exporter.getFinishedSpanItems()).filteredOn(d -> d.getName().equals(SpanNames.GRPO_STEP)).hasSize(5);
    // (the sync loop itself fails a step whose results were sampled from another version than the refit's)
  }

  @Test
  void asyncSteps_manySteps_everyStepTrainsAFullBatchNoOlderThanTheAgeBoundAndTheCountsAddUp() {
    GrpoSettings s = settings("async", "grpo.steps=5");
    ModelWeights w = initial(s);
    GrpoActors actors = actors(s, w);
    AsyncLoop loop = new AsyncLoop(s, actors, new TrainPhase(actors.trainer, s, runDir, java.util.Map.of()), steps(s),
        w);

    loop.run();

    assertThat(reported).hasSize(5);
    for (int i = 0; i < 5; i++) {
      StepRecord m = reported.get(i);
      assertThat(m.step()).isEqualTo(i + 1);
      assertThat(m.weightVersion()).isEqualTo(w.version() + i + 1);
      assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP);
    }
    assertThat(loop.collectorStats().failures()).isZero();
    // what the collector produced was trained on, dropped for its age, or is still in the buffer: none lost
    long trained = reported.stream().mapToLong(StepRecord::trajectories).sum();
    long dropped = reported.stream().mapToLong(m -> m.droppedForAge()).sum();
    assertThat(loop.collectorStats().trajectories()).isGreaterThanOrEqualTo(trained + dropped);
  }

  @Test
  void link_everyDistinctProducerOnceWithItsTrajectoryCountNoneSkipped() {
    List<SpanLink> producers = new ArrayList<>();
    for (int i = 0; i < 4096; i++) {
      producers.add(SpanLink.of(SpanContext.create("0af7651916cd43dd8448eb211c80319c", String.format("%016x", i + 1),
          TraceFlags.getSampled(), TraceState.getDefault())));
    }
    List<Rollout> rollouts = List.of(
        rollout(List.of(producers.get(0), producers.get(0))),
        rollout(List.of(producers.get(1), SpanLink.NONE)));
    List<Rollout> many = new ArrayList<>();
    for (int i = 0; i < producers.size(); i += 2) {
      many.add(rollout(producers.subList(i, i + 2)));
    }

    try (ScopedSpan step = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      AsyncLoop.link(step, rollouts);
    }
    try (ScopedSpan step = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      AsyncLoop.link(step, many);
    }

    List<SpanData> steps = exporter.getFinishedSpanItems();
    assertThat(steps.get(0).getLinks()).extracting(l -> l.getSpanContext().getSpanId())
        .containsExactly(producers.get(0).spanId(), producers.get(1).spanId());
    assertThat(steps.get(0).getLinks()).extracting(l -> l.getAttributes().get(RavelAttributes.LINK_TRAJECTORIES))
        .containsExactly(2L, 1L);
    // 4,096 trajectories from 4,096 calls: every producer linked (the provider's link limit is raised)
    assertThat(steps.get(1).getLinks()).hasSize(producers.size());
  }

  @Test
  void flatGroups_countsGroupsWhoseAdvantagesAreAllZero() {
    assertThat(TrainPhase.flatGroups(new double[] {0, 0, 1, -1, 0, 0}, 2)).isEqualTo(2);
    assertThat(TrainPhase.flatGroups(new double[] {0.5, -0.5}, 2)).isZero();
  }

  private static Rollout rollout(List<SpanLink> links) {
    List<Trajectory> ts = new ArrayList<>();
    for (int g = 0; g < links.size(); g++) {
      ts.add(new Trajectory("r" + g, new int[] {1}, new int[] {2}, new float[] {-0.1f}, 0, 0, g));
    }
    return new Rollout(new Problem("1+1=", "2"), ts, 0, 0, links);
  }

  private Set<String> names() {
    return exporter.getFinishedSpanItems().stream().map(SpanData::getName).collect(Collectors.toSet());
  }

  private SpanData only(String name) {
    List<SpanData> found = exporter.getFinishedSpanItems().stream().filter(d -> d.getName().equals(name)).toList();
    assertThat(found).as("spans named " + name).hasSize(1);
    return found.get(0);
  }

  private List<SpanData> childrenOf(SpanData parent) {
    return exporter.getFinishedSpanItems().stream().filter(d -> d.getParentSpanId().equals(parent.getSpanId()))
        .sorted((a, b) -> Long.compare(a.getStartEpochNanos(), b.getStartEpochNanos())).toList();
  }
}
