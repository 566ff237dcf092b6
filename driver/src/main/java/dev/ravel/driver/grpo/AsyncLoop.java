package dev.ravel.driver.grpo;

import dev.ravel.telemetry.context.SpanLink;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.workers.buffer.BufferBatch;
import dev.ravel.workers.buffer.BufferStats;
import dev.ravel.workers.buffer.ReplayBuffer;
import dev.ravel.workers.buffer.Rollout;
import dev.ravel.workers.collector.CollectorStats;
import dev.ravel.workers.collector.TrajectoryCollector;
import dev.ravel.workers.fault.FaultStats;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.trainer.TrainOutcome;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * Asynchronous GRPO: the collector generates ahead. A step waits for its batch
 * ({@code rl.idle.buffer_starvation}), links to the {@code rl.vllm.generate} spans that produced it, trains,
 * then refits: pauses the collector ({@code rl.idle.refit_bubble}), updates the workers and publishes the
 * new version, under which the collector's next generation nests.
 */
final class AsyncLoop {
  /** How long one take from the buffer waits before the loop checks the collector for a failure. */
  private static final long TAKE_WAIT_MS = 2_000L;
  /** How long a step waits for its batch in all. */
  private static final long STARVATION_BOUND_NANOS = 600_000_000_000L;
  /** How long the refit waits for the collector's in-flight calls to end. */
  private static final long PAUSE_TIMEOUT_MS = 60_000L;

  private final GrpoSettings settings;
  private final GrpoActors actors;
  private final TrainPhase trainPhase;
  private final Steps steps;
  /** The version the workers serve. */
  private long version;
  private CollectorStats collectorStats;
  private FaultStats collectorFaults;
  private BufferStats bufferStats;

  private final int firstStep;
  private final IntConsumer beforeStep;

  AsyncLoop(GrpoSettings settings, GrpoActors actors, TrainPhase trainPhase, Steps steps, ModelWeights initial) {
    this(settings, actors, trainPhase, steps, initial.version(), 0, step -> { });
  }

  /**
   * A loop whose workers serve weight version {@code servingVersion} and whose first step is the 0-based
   * {@code firstStep} (a resumed run's; the collector's first target step is the same); {@code beforeStep} runs
   * before each step and may end the run by throwing.
   */
  AsyncLoop(GrpoSettings settings, GrpoActors actors, TrainPhase trainPhase, Steps steps, long servingVersion,
      int firstStep, IntConsumer beforeStep) {
    this.firstStep = firstStep;
    this.beforeStep = beforeStep;
    this.settings = settings;
    this.actors = actors;
    this.trainPhase = trainPhase;
    this.steps = steps;
    this.version = servingVersion;
  }

  void run() {
    try {
      for (int step = firstStep; step < settings.steps(); step++) {
        beforeStep.accept(step);
        step(step);
      }
    } finally {
      // also when a step failed: no more generate calls while the session flushes and closes
      collectorStats = actors.collector.call(TrajectoryCollector::stop).get();
      collectorFaults = actors.collector.call(TrajectoryCollector::faults).get();
      bufferStats = actors.buffer.call(ReplayBuffer::stats).get();
    }
  }

  /** The replay buffer's counters when the run ended (null before). */
  BufferStats bufferStats() {
    return bufferStats;
  }

  /** The restarts the collector saw and the calls it issued again (null before the run ended). */
  FaultStats collectorFaults() {
    return collectorFaults;
  }

  /** The collector's counters when the run ended (null before). */
  CollectorStats collectorStats() {
    return collectorStats;
  }

  private void step(int step) {
    PhaseClock clock = steps.clock(step);
    long calls = 0;
    CollectorStats before = actors.collector.call(TrajectoryCollector::stats).get();
    try (ScopedSpan s = steps.start(step, version)) {
      try {
        if (step == firstStep) {
          if (actors.initialRefitPending()) { // servers that load the trainer's files: its initial weights first
            calls += clock.time(Phase.REFIT, () -> trainPhase.refit(step, actors::initialRefit));
          }
          long v = version;
          clock.time(Phase.REFIT, () -> actors.collector.call(TrajectoryCollector::publish, v, null).get());
          calls++;
        }
        Evaluation eval = settings.data() == null ? null : settings.data().eval();
        dev.ravel.telemetry.runs.StepRecord.Eval scores = null;
        if (eval != null && eval.at(step)) { // the weights published for this step, beside the collector's calls
          long v = version;
          scores = clock.time(Phase.EVALUATION, () -> eval.run(step, actors, steps.spans(), v));
          calls += eval.calls(actors);
        }
        Gathered got = clock.time(Phase.BUFFER_STARVATION, () -> gather(step));
        calls += got.calls;
        link(s, got.rollouts);
        List<Trajectory> batch = clock.time(Phase.DATA_PROCESSING, () -> flatten(got.rollouts));
        TrainPhase.Trained t = trainPhase.train(clock, s, step, batch);
        TrainOutcome update = t.outcome();
        version = update.version();
        calls += trainPhase.rayCalls(step);
        if (!settings.isLast(step)) { // after the last step nothing would train on newly published weights
          calls += clock.time(Phase.REFIT, () -> trainPhase.refit(step, () -> refit(update)));
        }
        CollectorStats after = actors.collector.call(TrajectoryCollector::stats).get();
        long collectorCalls = (after.generateCalls() - before.generateCalls())
            + (after.rewardCalls() - before.rewardCalls()) + (after.bufferCalls() - before.bufferCalls());
        int depth = actors.buffer.call(dev.ravel.workers.buffer.ReplayBuffer::stats).get().size();
        steps.finish(s, step, t, clock, got.droppedTrajectories, calls + collectorCalls, scores, depth,
            after.inFlight());
      } catch (RuntimeException | Error e) {
        s.error(e); // the failed step's span says so, with the exception as an event
        throw e;
      }
    }
  }

  /**
   * The refit bubble: pauses the collector, updates the workers (each call ends when its engine serves the
   * new version) and publishes the new version, which resumes the collector; the bubble's span covers all of
   * it, from the pause until generation resumes.
   */
  private int refit(TrainOutcome update) {
    if (settings.inflightUpdates()) {
      // the collector's calls go on: requests running at the update finish under the new weights (their tokens say
      // which version sampled them), and the collector labels what it schedules next with the new version
      int calls = actors.refit(update);
      actors.collector.call(TrajectoryCollector::publish, update.version(), actors.servedWeights()).get();
      return calls + 1;
    }
    return steps.spans().call(Phase.REFIT_BUBBLE, x -> {
      actors.collector.call(TrajectoryCollector::pause, PAUSE_TIMEOUT_MS).get();
      int calls = 1 + actors.refit(update);
      actors.collector.call(TrajectoryCollector::publish, update.version(), actors.servedWeights()).get();
      return calls + 1;
    });
  }

  private record Gathered(List<Rollout> rollouts, int droppedTrajectories, long calls) {}

  /**
   * Takes this step's groups from the buffer in short waits, failing fast with the collector's error when
   * it reports a failure instead of waiting out the whole starvation bound.
   */
  private Gathered gather(long step) {
    long deadline = System.nanoTime() + STARVATION_BOUND_NANOS;
    int wanted = settings.promptsPerStep();
    List<Rollout> rollouts = new ArrayList<>();
    int dropped = 0;
    long calls = 0;
    while (rollouts.size() < wanted) {
      BufferBatch b = actors.buffer.call(ReplayBuffer::take, step, wanted - rollouts.size(), settings.maxAge(),
          TAKE_WAIT_MS).get();
      calls++;
      rollouts.addAll(b.rollouts());
      dropped += b.droppedTrajectories();
      if (rollouts.size() >= wanted) {
        break;
      }
      CollectorStats c = actors.collector.call(TrajectoryCollector::stats).get();
      if (c.failures() > 0) { // a failed target's groups never arrive, whichever step it was for
        throw new IllegalStateException("step " + step + ": the collector failed: " + c.lastError());
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("step " + step + ": only " + rollouts.size() + " of " + wanted
            + " groups arrived within " + STARVATION_BOUND_NANOS / 1_000_000_000L + " s");
      }
    }
    return new Gathered(rollouts, dropped, calls);
  }

  private static List<Trajectory> flatten(List<Rollout> rollouts) {
    List<Trajectory> out = new ArrayList<>();
    rollouts.forEach(r -> out.addAll(r.trajectories()));
    return out;
  }

  /**
   * Links the step to every {@code rl.vllm.generate} span that produced one of its trajectories, each link
   * saying how many ({@code rl.link.trajectories}). With calls per chunk of groups that is a handful; the
   * SDK's link limit is raised to {@code ProcessTelemetry.MAX_LINKS} so none is dropped.
   */
  static void link(ScopedSpan step, List<Rollout> rollouts) {
    java.util.Map<SpanLink, Long> producers = new java.util.LinkedHashMap<>();
    for (Rollout r : rollouts) {
      for (SpanLink l : r.generateSpans()) {
        if (l.isValid()) {
          producers.merge(l, 1L, Long::sum);
        }
      }
    }
    producers.forEach((l, n) -> step.link(l, io.opentelemetry.api.common.Attributes.of(
        dev.ravel.telemetry.spans.RavelAttributes.LINK_TRAJECTORIES, n)));
  }
}
