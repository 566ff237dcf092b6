package dev.ravel.driver.grpo;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.actor.RavelRef;
import dev.ravel.workers.buffer.ReplayBuffer;
import dev.ravel.workers.buffer.ReplayBufferActor;
import dev.ravel.workers.collector.CollectorSpec;
import dev.ravel.workers.collector.TrajectoryCollector;
import dev.ravel.workers.collector.TrajectoryCollectorActor;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.fault.Failover;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.generation.GenerationWorkerActor;
import dev.ravel.workers.generation.GenerationWorkerSpec;
import dev.ravel.workers.generation.WeightsFileRef;
import dev.ravel.workers.generation.openai.ServerBackendSpec;
import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.TrainerState;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.python.PythonWorkers;
import dev.ravel.workers.reward.RewardEnvironment;
import dev.ravel.workers.reward.RewardEnvironmentActor;
import dev.ravel.workers.trainer.PolicyTrainer;
import dev.ravel.workers.trainer.PolicyTrainerActor;
import dev.ravel.workers.trainer.TrainOutcome;
import dev.ravel.workers.trainer.TrainerSpec;
import io.ray.api.ObjectRef;
import io.ray.api.exception.RayActorException;
import io.ray.api.placementgroup.PlacementGroup;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A GRPO run's actors: generation workers, the reward environment and the policy trainer, and in async
 * mode the replay buffer and the trajectory collector. Created together and awaited, so that start-up is
 * not charged to the first step.
 */
final class GrpoActors {
  private static final Logger LOG = LoggerFactory.getLogger(GrpoActors.class);
  /** Replay-buffer and collector calls served at once (takes, pushes and stats overlap). */
  private static final int SERVICE_CONCURRENCY = 4;
  /** How long the run waits for its actors to start (a Python actor imports PyTorch; a GPU may be busy). */
  private static final long READY_TIMEOUT_MS = 600_000L;
  /** The most generate calls a collector keeps in flight. */
  private static final int MAX_COLLECTOR_IN_FLIGHT = 64;
  /** The longest a step end waits for the engines' counters, all workers together. */
  private static final long ENGINE_READ_TIMEOUT_MS = 5_000L;

  final List<RavelActorHandle<GenerationWorker>> workers;
  /** The reward environments ({@code reward.workers}), each scoring a share of every batch. */
  final List<RavelActorHandle<RewardEnvironment>> rewards;
  /** Rank 0 of the trainer ranks: the one whose weights the workers load and that writes checkpoints. */
  final RavelActorHandle<PolicyTrainer> trainer;
  /** Every trainer rank ({@code trainer.workers}), rank 0 first; one for a trainer alone. */
  final List<RavelActorHandle<PolicyTrainer>> trainers;
  /** Null in sync mode. */
  final RavelActorHandle<ReplayBuffer> buffer;
  /** Null in sync mode. */
  final RavelActorHandle<TrajectoryCollector> collector;
  /** The driver's calls to the workers and the reward environment, surviving a restart of their processes. */
  final Failover failover;
  /** Where a refit puts a Java trainer's weights. */
  private final ObjectStore store;
  /** The weights the workers serve (their object in the object store), null before the first refit. */
  private ObjectRef<?> served;
  /** Where the Python trainer writes the weights files servers load ({@code runs/<id>/weights}); null otherwise. */
  private java.nio.file.Path weightsDir;
  private boolean initialRefitPending;
  /** Where the driver's refit stage ({@code rl.refit.put}) goes; no-op in tests that build actors by hand. */
  private dev.ravel.telemetry.spans.Spans spans = dev.ravel.telemetry.spans.Spans.noop();

  GrpoActors(List<RavelActorHandle<GenerationWorker>> workers, RavelActorHandle<RewardEnvironment> reward,
      RavelActorHandle<PolicyTrainer> trainer, RavelActorHandle<ReplayBuffer> buffer,
      RavelActorHandle<TrajectoryCollector> collector, Failover failover) {
    this(workers, List.of(reward), trainer, buffer, collector, failover, ObjectStore.RAY);
  }

  GrpoActors(List<RavelActorHandle<GenerationWorker>> workers, List<RavelActorHandle<RewardEnvironment>> rewards,
      RavelActorHandle<PolicyTrainer> trainer, RavelActorHandle<ReplayBuffer> buffer,
      RavelActorHandle<TrajectoryCollector> collector, Failover failover, ObjectStore store) {
    this(workers, rewards, List.of(trainer), buffer, collector, failover, store);
  }

  GrpoActors(List<RavelActorHandle<GenerationWorker>> workers, List<RavelActorHandle<RewardEnvironment>> rewards,
      List<RavelActorHandle<PolicyTrainer>> trainers, RavelActorHandle<ReplayBuffer> buffer,
      RavelActorHandle<TrajectoryCollector> collector, Failover failover, ObjectStore store) {
    this.store = java.util.Objects.requireNonNull(store, "store");
    this.failover = failover;
    this.workers = List.copyOf(workers);
    this.rewards = List.copyOf(rewards);
    this.trainers = List.copyOf(trainers);
    this.trainer = this.trainers.get(0);
    this.buffer = buffer;
    this.collector = collector;
  }

  /**
   * Creates every actor of a run that starts from {@code initial} (Java workers) or from the Python model's
   * seeded initialisation (Python workers), and waits until each is up. A resumed run ({@code from} not null) has
   * its trainer continue from the checkpoint's state, the initial policy staying its reference, and its workers
   * serve the checkpoint's weights (Python workers load them from the trainer before the first step).
   */
  static GrpoActors create(DriverSession session, GrpoSettings settings, ModelWeights initial, Resume from,
      int eos) {
    return create(session, settings, initial, from, eos, StartupTrace.none());
  }

  /**
   * As above, drawn in the run's start-up trace: one {@code rl.run.actors.<role>} span per role, from its first creation
   * (its placement group included) until its last actor answered, named in each actor's environment as the parent
   * of the actor's own start-up spans.
   */
  static GrpoActors create(DriverSession session, GrpoSettings settings, ModelWeights initial, Resume from,
      int eos, StartupTrace startup) {
    TrainerState resume = from == null ? null : from.state();
    ModelWeights weights = resume == null ? initial : resume.weights();
    List<RavelActorHandle<GenerationWorker>> workers = new ArrayList<>();
    GrpoConfig grpo = settings.grpo();
    GrpoSettings.Python py = settings.python();
    java.util.Map<Object, StartupTrace.Role> roles = new java.util.IdentityHashMap<>();
    StartupTrace.Role workersRole = startup.role(roleName(GenerationWorker.class), settings.workers());
    PlacementGroup group = Placements.group(settings.placement(), settings.workers(), READY_TIMEOUT_MS);
    for (int i = 0; i < settings.workers(); i++) {
      DriverSession.Creator<GenerationWorker> c;
      if (py != null && py.generation()) {
        String spec = PythonWorkers.generationSpec(py.model(), settings.seed(), eos, settings.modelName(), py.engine(),
            settings.maxRunningRequests(), py.generationDevice());
        c = session.pythonActor(PythonWorkers.GENERATION_WORKER, spec, GenerationWorker.class)
            .gpus(py.generationGpus());
      } else {
        ServerBackendSpec servers = settings.servers() == null ? null
            : settings.servers().forWorker(i, settings.workers());
        // beside the Python trainer the workers are only HTTP clients: their servers serve model.path, and every
        // weight version after it comes as the trainer's file (refitFromTrainer, also before the first step)
        GenerationWorkerSpec ws = new GenerationWorkerSpec(settings.kvTokenBudget(), settings.maxRunningRequests(),
            settings.modelName(), eos, py == null ? weights : null, servers);
        c = session.actor(GenerationWorkerActor::new, ws, GenerationWorker.class);
        if (settings.placement().gpus() > 0) {
          c.gpus(settings.placement().gpus()); // for the vLLM server the worker launches on its node
        }
      }
      if (group != null) {
        c.placementGroup(group, i).resource("CPU", settings.placement().cpus());
      }
      settings.placement().workerResources().forEach(c::resource);
      parent(c, workersRole);
      workers.add(c.maxConcurrency(settings.maxConcurrency()).maxRestarts(settings.maxRestarts()).remote());
      roles.put(workers.get(i), workersRole);
    }
    GrpoSettings.Data data = settings.data();
    List<RavelActorHandle<RewardEnvironment>> rewards = new ArrayList<>();
    StartupTrace.Role rewardsRole = startup.role(roleName(RewardEnvironment.class), settings.reward().workers());
    for (int i = 0; i < settings.reward().workers(); i++) {
      DriverSession.Creator<RewardEnvironment> c = data == null
          ? session.actor(RewardEnvironmentActor::new, settings.reward().javaClass(), RewardEnvironment.class)
          : session.pythonActor(PythonWorkers.REWARD_ENVIRONMENT, PythonWorkers.rewardSpec(data.modelPath(),
              data.prepared().rewardFunction(), data.rewardCodePath(), settings.reward().onError(),
              settings.reward().timeoutSeconds()), RewardEnvironment.class);
      rewards.add(parent(c, rewardsRole).maxRestarts(settings.maxRestarts()).remote());
      roles.put(rewards.get(i), rewardsRole);
    }
    List<RavelActorHandle<PolicyTrainer>> trainers = new ArrayList<>();
    StartupTrace.Role trainersRole = startup.role(roleName(PolicyTrainer.class), py == null ? 1 : py.trainers());
    if (py != null) {
      PlacementGroup ranksGroup = Placements.trainerGroup(settings.placement(), py.trainers(), READY_TIMEOUT_MS);
      for (int r = 0; r < py.trainers(); r++) {
        DriverSession.Creator<PolicyTrainer> c = session.pythonActor(PythonWorkers.POLICY_TRAINER,
            PythonWorkers.trainerSpec(py.model(), settings.seed(), py.trainerDevice(), grpo,
                from == null ? null : from.pythonStateFile(), r, py.trainers(), py.strategy()), PolicyTrainer.class)
            .gpus(py.trainerGpus());
        if (ranksGroup != null) {
          c.placementGroup(ranksGroup, r).resource("CPU", settings.placement().trainerCpus());
        }
        settings.placement().trainerResources().forEach(c::resource);
        trainers.add(parent(c, trainersRole).remote());
      }
    } else {
      trainers.add(parent(session.actor(PolicyTrainerActor::new, new TrainerSpec(initial, grpo, resume),
          PolicyTrainer.class), trainersRole).resources(settings.placement().trainerResources()).remote());
    }
    trainers.forEach(t -> roles.put(t, trainersRole));
    RavelActorHandle<ReplayBuffer> buffer = null;
    RavelActorHandle<TrajectoryCollector> collector = null;
    StartupTrace.Role bufferRole = StartupTrace.Role.NONE;
    StartupTrace.Role collectorRole = StartupTrace.Role.NONE;
    if (settings.async()) {
      bufferRole = startup.role(roleName(ReplayBuffer.class), 1);
      buffer = parent(session.actor(ReplayBufferActor::new, ReplayBuffer.class), bufferRole)
          .maxConcurrency(SERVICE_CONCURRENCY).resources(settings.placement().trainerResources()).remote();
      roles.put(buffer, bufferRole);
      CollectorSpec cs = new CollectorSpec(workers, rewards, buffer, settings.promptsPerStep(), settings.groupSize(),
          settings.sampling(), settings.seed(), (int) settings.maxAge() + 1,
          Math.max(1, Math.min(MAX_COLLECTOR_IN_FLIGHT, callsPerTarget(settings) * ((int) settings.maxAge() + 1))),
          settings.groupsPerCall(), settings.maxRestarts(), from == null ? 0 : from.weightVersion(),
          data == null ? null : data.prepared().prompts(), settings.restartWaitMs());
      collectorRole = startup.role(roleName(TrajectoryCollector.class), 1);
      collector = parent(session.actor(TrajectoryCollectorActor::new, cs, TrajectoryCollector.class), collectorRole)
          .maxConcurrency(SERVICE_CONCURRENCY).resources(settings.placement().trainerResources()).remote();
      roles.put(collector, collectorRole);
    }
    GrpoActors actors = new GrpoActors(workers, rewards, trainers, buffer, collector,
        new Failover(session.spans(), settings.maxRestarts(), workers, rewards, settings.restartWaitMs()),
        ObjectStore.RAY);
    actors.spans = session.spans();
    List<StartupTrace.Role> allRoles = List.of(workersRole, rewardsRole, trainersRole, bufferRole, collectorRole);
    try {
      // a worker that launches a server is up once the server answers, which may take up to launch_timeout_s
      actors.awaitReady(settings.servers() == null || !settings.servers().launches() ? READY_TIMEOUT_MS
          : Math.max(READY_TIMEOUT_MS, settings.servers().launchTimeout().toMillis() + 60_000L), roles);
    } catch (RuntimeException | Error e) {
      allRoles.forEach(r -> r.end(e));
      throw e;
    }
    allRoles.forEach(r -> r.end(null));
    actors.formTrainerGroup();
    actors.failover.recordProcesses();
    actors.weightsDir = settings.weightsFiles() ? session.telemetry().config().runDir().resolve("weights") : null;
    if (from != null && from.pythonStateFile() != null) {
      // Python workers start from the seed: load the checkpoint's (in the start-up trace, as a step's refit phase)
      try (var s = actors.spans.start(dev.ravel.telemetry.spans.Phase.REFIT)) {
        actors.refitFromTrainer(from.weightVersion());
      }
    } else {
      // servers shared with other runs hold whatever they last loaded: the first step loads this run's own
      actors.initialRefitPending = actors.weightsDir != null;
    }
    return actors;
  }

  /**
   * Whether the workers' servers must load the trainer's initial weights before the first step generates (Java
   * HTTP clients beside the Python trainer, a fresh run): the first step does it in its refit phase, so that the
   * refit is in a step's trace like every other.
   */
  boolean initialRefitPending() {
    return initialRefitPending;
  }

  /** The refit {@link #initialRefitPending()} asks for; returns the actor calls made. */
  int initialRefit() {
    int calls = refitFromTrainer(0);
    initialRefitPending = false;
    return calls;
  }

  /**
   * One batched call per worker, results back in request order. Requests come in groups of {@code groupSize}
   * consecutive ones (a prompt's samples), and whole groups are dealt to the workers round-robin, so a worker sees
   * each of its groups entire: an HTTP backend sends a group as one request with {@code n} choices, and the server
   * prefills its prompt once.
   */
  List<GenerationResult> generate(List<GenerationRequest> requests, int groupSize) {
    if (groupSize < 1) {
      throw new IllegalArgumentException("groupSize must be at least 1, got " + groupSize);
    }
    int w = workers.size();
    List<List<GenerationRequest>> chunks = new ArrayList<>();
    List<List<Integer>> positions = new ArrayList<>();
    for (int i = 0; i < w; i++) {
      chunks.add(new ArrayList<>());
      positions.add(new ArrayList<>());
    }
    for (int i = 0; i < requests.size(); i++) {
      int worker = (i / groupSize) % w;
      chunks.get(worker).add(requests.get(i));
      positions.get(worker).add(i);
    }
    List<Failover.Pending<List<GenerationResult>>> refs = new ArrayList<>();
    for (int i = 0; i < w; i++) {
      refs.add(chunks.get(i).isEmpty() ? null : failover.generate(i, false, chunks.get(i)));
    }
    GenerationResult[] out = new GenerationResult[requests.size()];
    for (int i = 0; i < w; i++) {
      if (refs.get(i) == null) {
        continue;
      }
      List<GenerationResult> part = refs.get(i).get(); // a worker that died is restarted, given the weights, asked again
      if (part.size() != positions.get(i).size()) {
        throw new IllegalStateException("generation_worker/" + i + " returned " + part.size() + " results for "
            + positions.get(i).size() + " requests");
      }
      for (int k = 0; k < part.size(); k++) {
        out[positions.get(i).get(k)] = part.get(k);
      }
    }
    return List.of(out);
  }

  /** The calls {@link #generate} makes for {@code requests} requests in groups of {@code groupSize}. */
  int generateCalls(int requests, int groupSize) {
    int groups = (requests + groupSize - 1) / groupSize;
    return Math.min(workers.size(), groups);
  }

  /** Reward calls that score {@code completions} completions: one per reward environment given some. */
  int rewardCalls(int completions) {
    return Math.max(1, Math.min(rewards.size(), completions));
  }

  /** Generate calls the collector makes for one target step. */
  static int callsPerTarget(GrpoSettings settings) {
    return (settings.promptsPerStep() + settings.groupsPerCall() - 1) / settings.groupsPerCall();
  }

  /** The role's name, as its actors' {@code ActorRole} says. */
  private static String roleName(Class<?> role) {
    return role.getAnnotation(dev.ravel.workers.actor.ActorRole.class).name();
  }

  /** The creator, with {@code role}'s span named as the parent of the actor's own start-up spans (if traced). */
  private static <I extends dev.ravel.workers.actor.RavelRole> DriverSession.Creator<I> parent(
      DriverSession.Creator<I> c, StartupTrace.Role role) {
    role.traceparent().ifPresent(tp -> c.env(dev.ravel.telemetry.context.TraceCarrier.STARTUP_ENV, tp));
    return c;
  }

  /**
   * Waits until every actor answers a first call, within {@code timeoutMs} for all; tells each actor's role in
   * {@code roles} (by handle) when it answered, for the run's start-up trace.
   */
  private void awaitReady(long timeoutMs, java.util.Map<Object, StartupTrace.Role> roles) {
    List<RavelRef<?>> ready = new ArrayList<>();
    List<StartupTrace.Role> of = new ArrayList<>();
    workers.forEach(w -> {
      ready.add(w.call(GenerationWorker::engineStats));
      of.add(roles.getOrDefault(w, StartupTrace.Role.NONE));
    });
    trainers.forEach(t -> {
      ready.add(t.call(PolicyTrainer::telemetryStats));
      of.add(roles.getOrDefault(t, StartupTrace.Role.NONE));
    });
    rewards.forEach(r -> {
      ready.add(r.call(RewardEnvironment::telemetryStats));
      of.add(roles.getOrDefault(r, StartupTrace.Role.NONE));
    });
    if (buffer != null) {
      ready.add(buffer.call(ReplayBuffer::stats));
      of.add(roles.getOrDefault(buffer, StartupTrace.Role.NONE));
      ready.add(collector.call(TrajectoryCollector::stats));
      of.add(roles.getOrDefault(collector, StartupTrace.Role.NONE));
    }
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    boolean[] seen = whenReady(ready, of, deadline);
    for (int i = 0; i < ready.size(); i++) {
      RavelRef<?> r = ready.get(i);
      long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000L);
      try {
        r.get(left);
        if (!seen[i]) {
          of.get(i).ready(dev.ravel.telemetry.spans.Spans.nowEpochNanos());
        }
      } catch (io.ray.api.exception.RayTimeoutException e) {
        throw new IllegalStateException("the run's actors were not up within " + timeoutMs / 1000 + " s: Ray"
            + " could not place them (do the cluster's nodes have the CPUs and GPUs asked for? generation.num_gpus,"
            + " trainer.num_gpus) or they are still starting (a server they launch: generation.launch_timeout_s)", e);
      }
    }
  }

  /**
   * Tells each call's role in {@code of} when the call answered, waiting with {@code Ray.wait} until all have or the
   * deadline passes; returns which were seen. A reading for the start-up trace only: any failure of it is left to the
   * callers' own waits (which then time each call as it is read).
   */
  private static boolean[] whenReady(List<RavelRef<?>> calls, List<StartupTrace.Role> of, long deadline) {
    boolean[] seen = new boolean[calls.size()];
    if (of.stream().allMatch(r -> r == StartupTrace.Role.NONE)) {
      return seen;
    }
    try {
      java.util.Map<ObjectRef<byte[]>, Integer> index = new java.util.IdentityHashMap<>();
      List<ObjectRef<byte[]>> pending = new ArrayList<>();
      for (int i = 0; i < calls.size(); i++) {
        ObjectRef<byte[]> r = calls.get(i).rayRef();
        index.put(r, i);
        pending.add(r);
      }
      while (!pending.isEmpty()) {
        long left = (deadline - System.nanoTime()) / 1_000_000L;
        if (left <= 0) {
          break;
        }
        io.ray.api.WaitResult<byte[]> w = io.ray.api.Ray.wait(pending, 1, (int) Math.min(Integer.MAX_VALUE, left));
        long now = dev.ravel.telemetry.spans.Spans.nowEpochNanos();
        for (ObjectRef<byte[]> r : w.getReady()) {
          Integer i = index.get(r);
          if (i != null && !seen[i]) {
            seen[i] = true;
            of.get(i).ready(now);
          }
        }
        pending = new ArrayList<>(w.getUnready());
      }
    } catch (RuntimeException e) {
      LOG.debug("actors' start-up times not read: {}", e.toString());
    }
    return seen;
  }

  /**
   * Forms the trainer group when there are several ranks: rank 0 names where they meet, every rank joins (each
   * call waits for all), and each then holds rank 0's weights. Nothing for a trainer alone.
   *
   * @throws IllegalStateException naming the ranks that did not join within the actors' start-up bound
   */
  private void formTrainerGroup() {
    if (trainers.size() == 1) {
      return;
    }
    String address = trainer.call(PolicyTrainer::rendezvous).get(READY_TIMEOUT_MS);
    List<RavelRef<Integer>> joins = trainers.stream().map(t -> t.call(PolicyTrainer::joinGroup, address)).toList();
    long deadline = System.nanoTime() + READY_TIMEOUT_MS * 1_000_000L;
    for (int r = 0; r < joins.size(); r++) {
      long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000L);
      try {
        int size = joins.get(r).get(left);
        if (size != trainers.size()) {
          throw new IllegalStateException("trainer rank " + r + " joined a group of " + size + ", not of "
              + trainers.size());
        }
      } catch (io.ray.api.exception.RayTimeoutException e) {
        throw new IllegalStateException("trainer.workers=" + trainers.size() + ": rank " + r + " did not join the"
            + " group at " + address + " within " + READY_TIMEOUT_MS / 1000 + " s (can every rank's node reach"
            + " rank 0's address?)", e);
      }
    }
    LOG.info("trainer group of {} ranks formed at {}", trainers.size(), address);
  }

  /**
   * Passes the weights of {@code update} to every generation worker as one object in the object store (a
   * Java trainer's weights put there by the driver, a Python trainer's left there by its {@code weights} call,
   * never read by the driver) and checks that each loaded that version; a worker whose process died is
   * loaded once Ray has restarted it. Returns the number of actor calls.
   */
  int refit(TrainOutcome update) {
    if (update.weights() == null) {
      return refitFromTrainer(update.version());
    }
    ObjectRef<?> ref;
    try (var s = spans.start(dev.ravel.telemetry.config.SpanGroup.REFIT, dev.ravel.telemetry.spans.SpanNames.REFIT_PUT)) {
      s.set(dev.ravel.telemetry.spans.RavelAttributes.REFIT_BYTES, update.weights().byteSize());
      ref = store.put(Payload.of(update.weights()));
    }
    return load(ref, update.version());
  }

  /**
   * Has every worker load the trainer's current weights, version {@code version}; returns the actor calls made.
   * Beside inference servers that load files ({@link GrpoSettings#weightsFiles()}), the trainer writes them as a
   * file into the run folder's {@code weights/} and the workers are given its reference; otherwise they are given
   * the trainer's own object, unread by the driver.
   */
  int refitFromTrainer(long version) {
    if (weightsDir == null) {
      return 1 + load(trainer.call(PolicyTrainer::weights).rayRef(), version);
    }
    WeightsFileRef file = WeightsFileRef.parse(trainer.call(PolicyTrainer::publishFile, weightsDir.toString()).get());
    if (file.version() != version) {
      throw new IllegalStateException("the trainer published weight version " + file.version() + ", expected "
          + version);
    }
    return 1 + load(store.put(Payload.of(file)), version);
  }

  private int load(ObjectRef<?> ref, long version) {
    served = ref; // held here so that the object outlives every worker's (and the collector's) use of it
    failover.weights(ref, version);
    List<Failover.Pending<Long>> loads = new ArrayList<>();
    for (int i = 0; i < workers.size(); i++) {
      loads.add(failover.updateWeights(i, ref));
    }
    for (Failover.Pending<Long> load : loads) {
      long v = load.get();
      if (v != version) {
        throw new IllegalStateException("worker loaded weight version " + v + ", expected " + version);
      }
    }
    return loads.size();
  }

  /** The object the workers' current weights are in; null before the first refit. */
  ObjectRef<?> servedWeights() {
    return served;
  }

  /**
   * Each generation worker's engine counters in worker order, null for a worker that could not be read (its process
   * died or is being restarted): a reading for telemetry, which never fails a step.
   */
  List<EngineStats> engineStatsByWorker() {
    List<RavelRef<EngineStats>> refs = new ArrayList<>();
    workers.forEach(w -> refs.add(w.call(GenerationWorker::engineStats)));
    List<EngineStats> out = new ArrayList<>();
    long deadline = System.nanoTime() + ENGINE_READ_TIMEOUT_MS * 1_000_000L;
    for (RavelRef<EngineStats> r : refs) {
      try { // a worker being restarted answers after its restart: the step does not wait for that
        out.add(r.get(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L)));
      } catch (RuntimeException e) {
        out.add(null);
      }
    }
    return out;
  }

  /**
   * Each generation worker's engine counters; a worker whose process died after the last step (its node lost,
   * say) is left out with a warning: the run's result does not depend on them.
   */
  List<EngineStats> engineStats() {
    List<RavelRef<EngineStats>> refs = new ArrayList<>();
    workers.forEach(w -> refs.add(w.call(GenerationWorker::engineStats)));
    List<EngineStats> out = new ArrayList<>();
    for (int i = 0; i < refs.size(); i++) {
      try {
        out.add(refs.get(i).get());
      } catch (RayActorException e) {
        LOG.warn("generation_worker/{}: no engine counters, its process died after the last step ({})", i,
            String.valueOf(e.getMessage()).lines().findFirst().orElse(""));
      }
    }
    return out;
  }
}
