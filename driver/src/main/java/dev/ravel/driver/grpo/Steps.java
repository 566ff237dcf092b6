package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import java.util.ArrayList;
import java.util.List;

/** What every step of either loop does around its phases: open its trace, then measure, record and report it. */
final class Steps {
  private final Spans spans;
  private final SpanContext runContext;
  private final StepListener listener;
  private final GrpoSettings settings;
  private final List<StepRecord> history = new ArrayList<>();
  private volatile dev.ravel.workers.model.ModelWeights lastWeights;
  /** Null: steps are not logged (tests of the loops). */
  private final StepLog log;
  /** Each generation worker's engine counters (null for one not read); null: the engines are not read. */
  private java.util.function.Supplier<List<dev.ravel.workers.engine.EngineStats>> engines;
  private final EngineWindow engineWindow = new EngineWindow();
  private boolean engineWarned;
  private PhaseHook phaseHook = PhaseHook.NONE;

  /**
   * @param runContext the span current when the run started (a submitted job's {@code rl.job.run}), which
   *     each step links to; invalid when there is none
   */
  Steps(Spans spans, SpanContext runContext, StepListener listener, GrpoSettings settings) {
    this(spans, runContext, listener, settings, null);
  }

  /** As above, each finished step also going to {@code log} (steps.jsonl and the run's step metrics). */
  Steps(Spans spans, SpanContext runContext, StepListener listener, GrpoSettings settings, StepLog log) {
    this.log = log;
    this.spans = spans;
    this.runContext = runContext;
    this.listener = listener;
    this.settings = settings;
  }

  /**
   * A step's root span: every step is its own trace, also inside a submitted job, whose {@code rl.job.run}
   * span the step links to instead of nesting under it.
   */
  ScopedSpan start(int step, long weightVersion) {
    ScopedSpan s = spans.start(SpanGroup.STEP, SpanNames.GRPO_STEP, Context.root()).link(runContext);
    return s.set(RavelAttributes.STEP, number(step)).set(RavelAttributes.ALGORITHM_MODE, settings.mode())
        .set(RavelAttributes.WEIGHT_VERSION, weightVersion);
  }

  /**
   * The number users see for the step at 0-based index {@code step}: steps are numbered from 1 everywhere
   * (the progress line's {@code step 1/30}, {@code rl.step}, {@code steps.jsonl}, {@code ravel trace --step},
   * the report), so step {@code n} trains weight version {@code n - 1} into {@code n} in sync mode.
   */
  static long number(int step) {
    return step + 1L;
  }

  /**
   * Reads the generation engines' counters at the end of every step from {@code engines} (one reading per worker,
   * null for one that could not be read), starting now: each step's line then has the engines over it.
   */
  void readEngines(java.util.function.Supplier<List<dev.ravel.workers.engine.EngineStats>> engines) {
    this.engines = engines;
    engineWindow.start(readEngines());
  }

  /** The engines' counters now; an empty list when they cannot be read (logged once: telemetry never fails a step). */
  private List<dev.ravel.workers.engine.EngineStats> readEngines() {
    try {
      return engines.get();
    } catch (RuntimeException e) {
      if (!engineWarned) {
        engineWarned = true;
        org.slf4j.LoggerFactory.getLogger(Steps.class).warn(
            "the generation engines' counters could not be read; steps go on without them ({})", e.toString());
      }
      return List.of();
    }
  }

  /** Tells {@code hook} before each phase of every step from now on. */
  void phaseHook(PhaseHook hook) {
    this.phaseHook = hook;
  }

  /** A clock for the phases of the step at 0-based index {@code step}. */
  PhaseClock clock(int step) {
    return new PhaseClock(spans, phaseHook, number(step));
  }

  Spans spans() {
    return spans;
  }

  /**
   * Ends a step's bookkeeping: its metrics (tokens per second of generation when the step generated, else of
   * the whole step) on its span, in the history and to the listener.
   */
  StepRecord finish(ScopedSpan s, int step, TrainPhase.Trained t, PhaseClock clock, int dropped, long rayCalls) {
    return finish(s, step, t, clock, dropped, rayCalls, null);
  }

  /** As above, with the eval set's scores of a step that evaluated (null otherwise). */
  StepRecord finish(ScopedSpan s, int step, TrainPhase.Trained t, PhaseClock clock, int dropped, long rayCalls,
      StepRecord.Eval eval) {
    return finish(s, step, t, clock, dropped, rayCalls, eval, 0, 0);
  }

  /**
   * As above, with how full the async pipeline was as the step ended: groups waiting in the replay buffer and the
   * collector's calls in flight.
   */
  StepRecord finish(ScopedSpan s, int step, TrainPhase.Trained t, PhaseClock clock, int dropped, long rayCalls,
      StepRecord.Eval eval, int bufferDepth, int inFlight) {
    double elapsed = clock.elapsed();
    double gen = clock.seconds(Phase.GENERATION.progressLabel());
    dev.ravel.workers.grpo.TrainMetrics u = t.outcome().metrics();
    StepRecord m = new StepRecord((int) number(step), settings.mode(), t.rewardMean(), t.rewardStd(), u.kl(), u.loss(),
        u.clipFraction(), t.tokens(), gen > 0 ? t.tokens() / gen : t.tokens() / Math.max(1e-9, elapsed),
        elapsed, clock.phases(), t.outcome().version(), t.trajectories(), dropped, rayCalls,
        s.spanContext().getTraceId(), t.completions(), eval,
        new StepRecord.Update(u.gradNorm(), u.learningRate(), u.entropy(), u.clipLow(), u.clipHigh(), u.clipDual(),
            u.meanRatio(), u.maxRatio(), u.tisTruncated(), u.zeroAdvantageGroups(), u.keptSequences(), u.epochs()),
        rewards(t.batch()),
        // the policy the step trained is the version before its update
        StepRecord.Lag.of(t.outcome().version() - 1,
            t.batch().stream().map(dev.ravel.workers.grpo.Trajectory::weightVersion).toList(), bufferDepth, inFlight),
        engines == null ? null : engineWindow.next(readEngines()));
    s.set(RavelAttributes.REWARD_MEAN, m.rewardMean())
        .set(RavelAttributes.NUM_TRAJECTORIES, (long) m.trajectories())
        .set(RavelAttributes.DROPPED_TRAJECTORIES, (long) m.droppedForAge())
        .set(RavelAttributes.COMPLETIONS_CLIPPED, (long) t.completions().clipped())
        .set(RavelAttributes.TRAIN_EPOCHS, (long) u.epochs())
        .set(RavelAttributes.TRAIN_GRAD_NORM, u.gradNorm())
        .set(RavelAttributes.TRAIN_LEARNING_RATE, u.learningRate())
        .set(RavelAttributes.POLICY_LAG_MAX, (long) m.lag().maxAge())
        .set(RavelAttributes.POLICY_LAG_MEAN, m.lag().meanAge());
    if (m.rewards().failed() > 0) {
      s.set(RavelAttributes.REWARD_FAILED, (long) m.rewards().failed());
    }
    history.add(m);
    lastWeights = t.outcome().weights();
    if (log != null) {
      log.record(m, t.batch());
    }
    t.completeCheckpoint(); // after the step's line: a checkpoint never runs ahead of steps.jsonl
    listener.onStep(m, settings.steps());
    return m;
  }

  /**
   * What the reward function gave beyond the rewards of {@code batch}: each named component's mean over the
   * completions that have it, and the completions scored 0 because it raised.
   */
  static StepRecord.Rewards rewards(List<dev.ravel.workers.grpo.Trajectory> batch) {
    java.util.Map<String, double[]> sums = new java.util.LinkedHashMap<>(); // name -> {sum, count}
    int failed = 0;
    for (dev.ravel.workers.grpo.Trajectory t : batch) {
      dev.ravel.workers.grpo.Scoring s = t.scoring();
      if (s == null) {
        continue;
      }
      failed += s.failed() ? 1 : 0;
      s.components().forEach((k, v) -> {
        double[] a = sums.computeIfAbsent(k, x -> new double[2]);
        a[0] += v;
        a[1]++;
      });
    }
    java.util.Map<String, Double> means = new java.util.LinkedHashMap<>();
    sums.forEach((k, a) -> means.put(k, a[0] / a[1]));
    return new StepRecord.Rewards(means, failed);
  }

  /** The digest of the newest step's weights (null before a step, or when the trainer keeps its weights). */
  String lastWeightsSha256() {
    dev.ravel.workers.model.ModelWeights w = lastWeights;
    return w == null ? null : w.sha256();
  }

  List<StepRecord> history() {
    return List.copyOf(history);
  }
}
