package dev.ravel.driver.grpo;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.spans.StepMetricNames;
import dev.ravel.workers.collector.CollectorStats;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import io.opentelemetry.api.trace.Span;
import java.util.List;

/**
 * GRPO on Ray, sync or async, one trace per step (see DESIGN.md, "Span placement"): creates the run's
 * actors ({@link GrpoActors}) and runs its steps in the {@link SyncLoop} or the {@link AsyncLoop}, both of
 * which train through the one {@link TrainPhase}.
 */
public final class GrpoRun {
  private final DriverSession session;
  private final GrpoSettings settings;
  private final StepListener listener;
  private final Tokenizer tokenizer = CharTokenizer.arithmetic();
  private final ArithmeticTask task = ArithmeticTask.standard();
  private Steps steps;
  private GrpoActors actors;
  private AsyncLoop async;

  /** A run of {@code config}'s GRPO settings in {@code session}, reporting each step to {@code listener}. */
  public GrpoRun(DriverSession session, RunConfig config, StepListener listener) {
    this.session = session;
    this.settings = GrpoSettings.from(config);
    this.listener = listener;
  }

  /** Creates the actors, runs every step and returns the history. */
  public List<StepMetrics> run() {
    StepLog log = new StepLog(session.config().runDir(),
        session.telemetry().openTelemetry().getMeter(StepMetricNames.INSTRUMENTATION_SCOPE));
    steps = new Steps(session.spans(), Span.current().getSpanContext(), listener, settings, log);
    ModelWeights initial = ModelWeights.init(settings.javaModel(), settings.seed());
    actors = GrpoActors.create(session, settings, initial, tokenizer.eos());
    TrainPhase train = new TrainPhase(actors.trainer, settings, session.config().runDir());
    if (settings.async()) {
      async = new AsyncLoop(settings, actors, train, steps, initial);
      async.run();
    } else {
      new SyncLoop(settings, actors, train, steps, task, tokenizer, initial).run();
    }
    return steps.history();
  }

  /** The steps finished so far. */
  public List<StepMetrics> history() {
    return steps == null ? List.of() : steps.history();
  }

  /** The collector's counters at the end of an async run (null for sync, or before the run ended). */
  public CollectorStats collectorStats() {
    return async == null ? null : async.collectorStats();
  }

  /** Each generation worker's engine counters. */
  public List<EngineStats> engineStats() {
    return actors == null ? List.of() : actors.engineStats();
  }
}
