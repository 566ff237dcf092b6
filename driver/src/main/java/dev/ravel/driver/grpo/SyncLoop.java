package dev.ravel.driver.grpo;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.fault.Failover;
import dev.ravel.workers.generation.StepBatch;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import dev.ravel.workers.task.PromptSource;
import dev.ravel.workers.trainer.TrainOutcome;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * Synchronous GRPO: every step generates with the newest weights, then trains. Data processing, refit
 * (weights put once, the reference passed to every worker), generation (one batched call per worker inside
 * {@code rl.vllm.generate}), reward, then the shared {@link TrainPhase}.
 */
final class SyncLoop {
  private final GrpoSettings settings;
  private final GrpoActors actors;
  private final TrainPhase trainPhase;
  private final Steps steps;
  private final PromptSource prompts;
  /** The version the workers serve, and the update that made it (null before the first step). */
  private long version;
  private TrainOutcome lastUpdate;

  private final int firstStep;
  private final IntConsumer beforeStep;

  SyncLoop(GrpoSettings settings, GrpoActors actors, TrainPhase trainPhase, Steps steps, ArithmeticTask task,
      Tokenizer tokenizer, ModelWeights initial) {
    this(settings, actors, trainPhase, steps, PromptSource.of(task, tokenizer), initial.version(), 0, step -> { });
  }

  /**
   * A loop whose workers serve weight version {@code servingVersion} and whose first step is the 0-based
   * {@code firstStep} (a resumed run's); {@code beforeStep} runs before each step and may end the run by throwing.
   */
  SyncLoop(GrpoSettings settings, GrpoActors actors, TrainPhase trainPhase, Steps steps, PromptSource prompts,
      long servingVersion, int firstStep, IntConsumer beforeStep) {
    this.firstStep = firstStep;
    this.beforeStep = beforeStep;
    this.settings = settings;
    this.actors = actors;
    this.trainPhase = trainPhase;
    this.steps = steps;
    this.prompts = prompts;
    this.version = servingVersion;
  }

  void run() {
    for (int step = firstStep; step < settings.steps(); step++) {
      beforeStep.accept(step);
      step(step);
    }
  }

  private void step(int step) {
    PhaseClock clock = steps.clock(step);
    long calls = 0;
    try (ScopedSpan s = steps.start(step, version)) {
      try {
        StepBatch batch = clock.time(Phase.DATA_PROCESSING, () -> StepBatch.plan(prompts,
            settings.promptsPerStep(), settings.groupSize(), settings.sampling(), settings.seed(), step));
        if (lastUpdate != null) { // the first step (of a run, or of a resumed run) serves what the workers have
          TrainOutcome update = lastUpdate;
          calls += clock.time(Phase.REFIT, () -> trainPhase.refit(step, () -> actors.refit(update)));
        } else if (actors.initialRefitPending()) { // servers that load the trainer's files: its initial weights
          calls += clock.time(Phase.REFIT, () -> trainPhase.refit(step, actors::initialRefit));
        }
        Evaluation eval = settings.data() == null ? null : settings.data().eval();
        dev.ravel.telemetry.runs.StepRecord.Eval scores = null;
        if (eval != null && eval.at(step)) { // the weights the step serves, on the held-out prompts
          long v = version;
          scores = clock.time(Phase.EVALUATION, () -> eval.run(step, actors, steps.spans(), v));
          calls += eval.calls(actors);
        }
        List<GenerationResult> results = clock.time(Phase.GENERATION,
            () -> steps.spans().call(SpanGroup.GENERATION, SpanNames.VLLM_GENERATE, g -> {
              g.set(RavelAttributes.GENERATION_MODE, "sync").set(RavelAttributes.WEIGHT_VERSION, version)
                  .set(RavelAttributes.NUM_REQUESTS, (long) batch.requests().size());
              return actors.generate(batch.requests(), settings.groupSize());
            }));
        calls += actors.generateCalls(batch.requests().size(), settings.groupSize());
        results.forEach(GenerationResult::requireSucceeded);
        requireVersion(results, version);
        List<int[]> completions = results.stream().map(GenerationResult::completionTokens).toList();
        dev.ravel.workers.reward.RewardScores rewards = clock.time(Phase.REWARD,
            () -> actors.failover.score(batch.problemPerRequest(), completions, Steps.number(step)));
        calls += actors.rewardCalls(completions.size());
        List<Trajectory> trajectories = batch.trajectories(0, batch.problems().size(), results, rewards);
        TrainPhase.Trained t = trainPhase.train(clock, s, step, trajectories);
        lastUpdate = t.outcome();
        version = lastUpdate.version();
        steps.finish(s, step, t, clock, 0, calls + trainPhase.rayCalls(step), scores);
      } catch (RuntimeException | Error e) {
        s.error(e); // the failed step's span says so, with the exception as an event
        throw e;
      }
    }
  }

  /**
   * Sync GRPO is on-policy: every completion must come from the weights the step refit (a worker that Ray
   * restarted and that was not given them would serve the initial weights).
   */
  static void requireVersion(List<GenerationResult> results, long version) {
    for (GenerationResult r : results) {
      if (r.weightVersion() != GenerationResult.NO_VERSION && r.weightVersion() != version) {
        throw new IllegalStateException("request " + r.requestId() + " was generated with weight version "
            + r.weightVersion() + ", but the step serves version " + version);
      }
    }
  }

}
