package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.spans.StepMetricNames;
import dev.ravel.workers.buffer.BufferStats;
import dev.ravel.workers.collector.CollectorStats;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.fault.FaultStats;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import io.opentelemetry.api.trace.Span;
import io.ray.api.Ray;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * GRPO on Ray, sync or async, one trace per step (see docs/design.md, "Span placement"): creates the run's
 * actors ({@link GrpoActors}) and runs its steps in the {@link SyncLoop} or the {@link AsyncLoop}, both of
 * which train through the one {@link TrainPhase}.
 */
public final class GrpoRun {
  private final DriverSession session;
  private final GrpoSettings settings;
  private final StepListener listener;
  private final Tokenizer tokenizer = CharTokenizer.arithmetic();
  private final ArithmeticTask task = ArithmeticTask.standard();
  private final Resume resume;
  private final java.util.Map<String, Object> resolvedConfig;
  /** The step's prompts: the built-in digit task, or your data. */
  private final dev.ravel.workers.task.PromptSource prompts;
  /** The end-of-sequence token of the run's tokenizer. */
  private final int eos;
  private volatile boolean stopRequested;
  private PhaseHook phaseHook = PhaseHook.NONE;
  private Steps steps;
  private GrpoActors actors;
  private AsyncLoop async;
  /** The nodes alive once the actors had started (id to address). */
  private Map<String, String> nodesAtStart = Map.of();

  /** A run of {@code config}'s GRPO settings in {@code session}, reporting each step to {@code listener}. */
  public GrpoRun(DriverSession session, RunConfig config, StepListener listener) {
    this(session, config, listener, null);
  }

  /**
   * As above, going on from {@code resume} (null for a new run): the trainer continues from the checkpoint's
   * weights and optimizer state, the workers serve those weights, and the first step run is the one after
   * the checkpoint's.
   */
  public GrpoRun(DriverSession session, RunConfig config, StepListener listener, Resume resume) {
    this(session, config, listener, resume, null);
  }

  /** As above, on your {@code data} (null: the built-in digit task). */
  public GrpoRun(DriverSession session, RunConfig config, StepListener listener, Resume resume, PreparedData data) {
    this.session = session;
    this.settings = GrpoSettings.from(config, data);
    this.prompts = data == null ? dev.ravel.workers.task.PromptSource.of(task, tokenizer) : data.prompts();
    this.eos = data == null ? tokenizer.eos() : data.eosToken();
    this.listener = listener;
    this.resume = resume;
    this.resolvedConfig = config.resolved();
  }

  /**
   * Asks the run to stop after the step in progress (from any thread, a signal handler's included):
   * {@link #run} then throws {@link RunInterruptedException}.
   */
  public void requestStop() {
    stopRequested = true;
  }

  /**
   * Tells {@code hook} on the driver's thread before each phase of every step, and waits for it (see
   * {@link PhaseHook}: for tests of faults); set before {@link #run}. Returns this run.
   */
  public GrpoRun phaseHook(PhaseHook hook) {
    this.phaseHook = java.util.Objects.requireNonNull(hook, "hook");
    return this;
  }

  /**
   * The process id of each trainer rank, rank 0 first, asked of the ranks now (for tests of faults and for tools);
   * empty before the run's actors started.
   */
  public List<Long> trainerProcessIds() {
    GrpoActors a = actors;
    if (a == null) {
      return List.of();
    }
    return a.trainers.stream().map(t -> t.call(dev.ravel.workers.actor.RavelRole::processId))
        .map(dev.ravel.workers.actor.RavelRef::get).toList();
  }

  /** Creates the actors, runs every step and returns the history. */
  public List<StepRecord> run() {
    if (resume != null) {
      resume.truncateStepLog(session.config().runDir());
    }
    StepLog log = new StepLog(session.config().runDir(),
        session.telemetry().openTelemetry().getMeter(StepMetricNames.INSTRUMENTATION_SCOPE),
        session.config().samplesPerStep());
    steps = new Steps(session.spans(), Span.current().getSpanContext(), listener, settings, log);
    steps.phaseHook(phaseHook);
    // the run's start-up, a trace of its own until just before the first step (docs/design.md, "Span placement")
    StartupTrace startup = StartupTrace.open(session.spans(), session.takeStartup(), Span.current().getSpanContext());
    long serving;
    TrainPhase train;
    try (var scope = startup.context().makeCurrent()) {
      ModelWeights initial = ModelWeights.init(settings.javaModel(), settings.seed()); // also the reference policy
      serving = resume == null ? initial.version() : resume.weightVersion();
      actors = GrpoActors.create(session, settings, initial, resume, eos, startup);
      nodesAtStart = aliveNodes();
      if (session.config().enabled()) {
        steps.readEngines(actors::engineStatsByWorker); // the engines over each step, in its line of steps.jsonl
      }
      train = new TrainPhase(actors.trainers, settings, session.config().runDir(), resolvedConfig, eos);
    } catch (RuntimeException | Error e) {
      startup.end(e);
      throw e;
    }
    startup.end(null);
    int first = resume == null ? 0 : resume.completedSteps();
    java.util.function.IntConsumer beforeStep = step -> { // step: the 0-based index, also the steps completed
      if (stopRequested) {
        throw new RunInterruptedException(step);
      }
    };
    try {
      if (settings.async()) {
        async = new AsyncLoop(settings, actors, train, steps, serving, first, beforeStep);
        async.run();
      } else {
        new SyncLoop(settings, actors, train, steps, prompts, serving, first, beforeStep).run();
      }
    } catch (RunInterruptedException e) {
      train.checkpointStopped(); // so that --resume goes on from the last step, whatever grpo.checkpoint_every says
      throw e;
    }
    return steps.history();
  }

  /**
   * The SHA-256 of the last step's weights ({@link ModelWeights#sha256}): a resumed run that ends with the same
   * digest as an uninterrupted one ends with bit-identical weights (a Python trainer's: the digest of its last
   * checkpoint, {@code policy.weights_sha256}). Null before a step.
   */
  public String finalWeightsSha256() {
    if (steps == null) {
      return null;
    }
    String java = steps.lastWeightsSha256();
    if (java != null || steps.history().isEmpty()) {
      return java;
    }
    // a Python trainer keeps its weights: the digest it wrote with the last step's checkpoint (the last step is
    // always checkpointed)
    int done = (resume == null ? 0 : resume.completedSteps()) + steps.history().size();
    return Checkpoints.latest(session.config().runDir()).filter(c -> c.meta().step() == done)
        .map(c -> c.meta().weightsSha256()).orElse(null);
  }

  /** The steps finished so far. */
  public List<StepRecord> history() {
    return steps == null ? List.of() : steps.history();
  }

  /** The collector's counters at the end of an async run (null for sync, or before the run ended). */
  public CollectorStats collectorStats() {
    return async == null ? null : async.collectorStats();
  }

  /**
   * The replay buffer's counters at the end of an async run (null for sync, or before the run ended): every
   * group the collector pushed was taken by a step, dropped for age, or is still in the buffer.
   */
  public BufferStats bufferStats() {
    return async == null ? null : async.bufferStats();
  }

  /**
   * The nodes alive when the run's actors had started that the cluster now counts dead, each as
   * {@code address (node id)}: a node lost mid-run, for run.json's {@code faults}.
   */
  public List<String> deadNodes() {
    if (nodesAtStart.isEmpty()) {
      return List.of();
    }
    Map<String, String> alive = aliveNodes();
    return nodesAtStart.entrySet().stream().filter(e -> !alive.containsKey(e.getKey()))
        .map(e -> e.getValue() + " (" + e.getKey() + ")").toList();
  }

  /** The cluster's alive nodes, id to address; empty when Ray cannot say. */
  private static Map<String, String> aliveNodes() {
    try {
      Map<String, String> m = new LinkedHashMap<>();
      Ray.getRuntimeContext().getAllNodeInfo().stream().filter(n -> n.isAlive)
          .forEach(n -> m.put(n.nodeId.toString(), n.nodeAddress));
      return m;
    } catch (RuntimeException e) {
      return Map.of();
    }
  }

  /**
   * The actors' restarts and the calls issued again after one died: the driver's and (async) the collector's
   * view together, a restart both saw counted once.
   */
  public FaultStats faults() {
    if (actors == null) {
      return FaultStats.NONE;
    }
    FaultStats f = actors.failover.stats();
    return async == null || async.collectorFaults() == null ? f : f.plus(async.collectorFaults());
  }

  /** Each generation worker's engine counters. */
  public List<EngineStats> engineStats() {
    return actors == null ? List.of() : actors.engineStats();
  }
}
