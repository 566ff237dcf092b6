package dev.ravel.workers.fault;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.actor.RavelRef;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.reward.RewardEnvironment;
import dev.ravel.workers.reward.RewardScores;
import dev.ravel.workers.task.Problem;
import io.opentelemetry.api.common.Attributes;
import io.ray.api.ObjectRef;
import io.ray.api.exception.RayActorException;
import io.ray.api.exception.RayTimeoutException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls to the generation workers and the reward environment that survive the death of an actor's process.
 * Ray restarts such an actor (up to {@code cluster.max_restarts} times) in a new process built from its
 * constructor arguments, so a restarted generation worker serves the run's initial weights: before a call is
 * issued again, the new process is given the current weights ({@link #weights}) and must answer with their
 * version. The call then goes again with the same requests (same ids and seeds), once per failure.
 *
 * <p>Spans: the failed call is an ERROR span {@link SpanNames#FAULT_FAILED_CALL} from its issue to its
 * failure, each retry a {@link SpanNames#FAULT_RETRY} beside it (the actor's own span for the call is the
 * retry's child), both under the span current when the call was read. A call that succeeds the first time
 * adds no span.
 *
 * <pre>{@code
 * Failover f = new Failover(spans, 3, workers, reward);
 * f.recordProcesses();
 * Failover.Pending<List<GenerationResult>> p = f.generate(0, false, requests); // issued now
 * List<GenerationResult> results = p.get(); // retried here if worker 0 died
 * }</pre>
 *
 * <p>A death Ray handles before the next call reaches the actor fails no call: Ray queues the call and hands it to the
 * restarted process. So after every answer the actor is asked which process it runs in; a process not seen before
 * is a restart, counted and given the current weights like any other. A generate call such a process answered under
 * weights older than the current ones (it started from the constructor's) counts as failed (its span says why) and
 * goes again on the loaded process; an answer that holds no such tokens stands.
 *
 * <p>Thread-safe: several calls may fail on one dead worker at once (async mode); its restart is handled, and
 * counted, once.
 */
public final class Failover {
  private static final Logger LOG = LoggerFactory.getLogger(Failover.class);
  /** The reward environment's name in {@link FaultStats#processes()}. */
  public static final String REWARD = "reward_environment";
  /** How long a restart may take before the actor counts as dead for good. */
  /** How long a call waits for a dead actor's restart unless told ({@code cluster.node_loss_timeout_s}). */
  public static final long RESTART_WAIT_MS = 120_000L;
  private static final long ASK_AGAIN_MS = 250L;

  private final Spans spans;
  private final int maxRestarts;
  private final List<RavelActorHandle<GenerationWorker>> workers;
  private final List<RavelActorHandle<RewardEnvironment>> rewards;
  /** Per actor (workers by index, then the reward environments): the processes seen, guarded by the list. */
  private final List<List<Long>> pids = new ArrayList<>();
  /** Per actor, as {@link #pids}: the address of the node its newest process runs on (null: not known). */
  private final List<String> nodes = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final AtomicLong failedCalls = new AtomicLong();
  private final AtomicLong retriedCalls = new AtomicLong();
  private final AtomicLong retriedRequests = new AtomicLong();
  private volatile Weights weights;
  private final long restartWaitMs;

  private record Weights(ObjectRef<?> ref, long version) {}

  /**
   * @param maxRestarts how often Ray restarts each actor (the actors must have been created with it): a call
   *     is issued at most {@code maxRestarts + 1} times
   */
  public Failover(Spans spans, int maxRestarts, List<RavelActorHandle<GenerationWorker>> workers,
      RavelActorHandle<RewardEnvironment> reward) {
    this(spans, maxRestarts, workers, List.of(reward), RESTART_WAIT_MS);
  }

  /** As above, with several reward environments ({@code reward.workers}) that share each batch's scoring. */
  public Failover(Spans spans, int maxRestarts, List<RavelActorHandle<GenerationWorker>> workers,
      List<RavelActorHandle<RewardEnvironment>> rewards) {
    this(spans, maxRestarts, workers, rewards, RESTART_WAIT_MS);
  }

  Failover(Spans spans, int maxRestarts, List<RavelActorHandle<GenerationWorker>> workers,
      RavelActorHandle<RewardEnvironment> reward, long restartWaitMs) {
    this(spans, maxRestarts, workers, List.of(reward), restartWaitMs);
  }

  /**
   * As above, waiting at most {@code restartWaitMs} for a dead actor to be restarted (a node lost may leave no node
   * that can take it: then the call fails, naming the actor and where it last ran).
   */
  public Failover(Spans spans, int maxRestarts, List<RavelActorHandle<GenerationWorker>> workers,
      List<RavelActorHandle<RewardEnvironment>> rewards, long restartWaitMs) {
    if (rewards.isEmpty()) {
      throw new IllegalArgumentException("a failover needs a reward environment");
    }
    this.restartWaitMs = restartWaitMs;
    if (maxRestarts < 0) {
      throw new IllegalArgumentException("maxRestarts must be >= 0, got " + maxRestarts);
    }
    this.spans = spans;
    this.maxRestarts = maxRestarts;
    this.workers = List.copyOf(workers);
    this.rewards = List.copyOf(rewards);
    for (int i = 0; i < workers.size() + rewards.size(); i++) {
      pids.add(new ArrayList<>());
      nodes.add(null);
    }
  }

  /** Reads each actor's process id, so that a later restart is told apart from the first process. */
  public void recordProcesses() {
    List<RavelRef<Long>> refs = new ArrayList<>();
    workers.forEach(w -> refs.add(w.call(GenerationWorker::processId)));
    rewards.forEach(r -> refs.add(r.call(RewardEnvironment::processId)));
    for (int i = 0; i < refs.size(); i++) {
      seen(i, refs.get(i).get());
    }
    List<RavelActorHandle<?>> all = new ArrayList<>(workers);
    all.addAll(rewards);
    List<String> where = ActorNodes.nodesOf(all);
    for (int i = 0; i < where.size(); i++) {
      nodes.set(i, where.get(i));
    }
  }

  /**
   * The weights a restarted worker must load before it serves: {@code ref} (passed to
   * {@link GenerationWorker#updateWeights}) of version {@code version}. Null before the first refit (a
   * restarted worker starts with the initial weights).
   */
  public void weights(ObjectRef<?> ref, long version) {
    this.weights = ref == null ? null : new Weights(ref, version);
  }

  /** Issues a generate call ({@code async}: {@link GenerationWorker#generateAsync}) to worker {@code worker}. */
  public Pending<List<GenerationResult>> generate(int worker, boolean async, List<GenerationRequest> requests) {
    RavelActorHandle<GenerationWorker> w = workers.get(worker);
    // to a Java worker the requests travel packed (RequestWire); a Python worker's get their JSON as before
    List<GenerationRequest> packed = dev.ravel.workers.engine.RequestWire.serializable(requests);
    Supplier<RavelRef<List<GenerationResult>>> issue = async
        ? () -> w.call(GenerationWorker::generateAsync, packed)
        : () -> w.call(GenerationWorker::generate, packed);
    return new Pending<>(worker, requests.size(), issue, this::servedUnderOlderWeights);
  }

  /**
   * Why {@code results} cannot stand: some token was sampled under weights older than the current ones (the answer
   * of a restarted worker that had not been given them); null when they can.
   */
  private String servedUnderOlderWeights(List<GenerationResult> results) {
    Weights w = weights;
    if (w == null) {
      return null; // no refit yet: a restarted worker serves the weights it was built with, the current ones
    }
    long oldest = results.stream().filter(r -> r.weightVersion() != GenerationResult.NO_VERSION)
        .mapToLong(GenerationResult::oldestWeightVersion).min().orElse(w.version());
    return oldest >= w.version() ? null
        : "answered under weight version " + oldest + ", older than the current " + w.version();
  }

  /**
   * Loads {@code ref} (version {@code version}) on worker {@code worker} and checks that it answers with
   * that version; a worker that died meanwhile is loaded once restarted. Call {@link #weights} first.
   */
  public Pending<Long> updateWeights(int worker, ObjectRef<?> ref) {
    RavelActorHandle<GenerationWorker> w = workers.get(worker);
    return new Pending<>(worker, 0, () -> w.call(GenerationWorker::updateWeights, ref), null);
  }

  /**
   * Scores {@code completions} of training step {@code step} (numbered from 1), each reward environment a contiguous share of them at once (in order), a share
   * issued again on its restarted environment if its process died.
   */
  public RewardScores score(List<Problem> problems, List<int[]> completions, long step) {
    if (problems.size() != completions.size()) {
      throw new IllegalArgumentException(problems.size() + " problems for " + completions.size() + " completions");
    }
    int parts = Math.max(1, Math.min(rewards.size(), completions.size()));
    List<Pending<RewardScores>> pending = new ArrayList<>(parts);
    for (int r = 0; r < parts; r++) {
      int from = r * completions.size() / parts;
      int to = (r + 1) * completions.size() / parts;
      RavelActorHandle<RewardEnvironment> env = rewards.get(r);
      List<Problem> p = List.copyOf(problems.subList(from, to)); // sent to an actor: serializable
      List<int[]> c = List.copyOf(completions.subList(from, to));
      pending.add(new Pending<>(workers.size() + r, 0, () -> env.call(RewardEnvironment::score, p, c, step), null));
    }
    List<RewardScores> scores = new ArrayList<>(parts);
    pending.forEach(x -> scores.add(x.get()));
    RewardScores all = RewardScores.concat(scores);
    if (all.size() != completions.size()) {
      throw new IllegalStateException("the reward environment scored " + all.size() + " of " + completions.size()
          + " completions");
    }
    return all;
  }

  /** What this failover saw so far. */
  public FaultStats stats() {
    Map<String, List<Long>> p = new LinkedHashMap<>();
    for (int i = 0; i < pids.size(); i++) {
      synchronized (pids.get(i)) {
        p.put(name(i), List.copyOf(pids.get(i)));
      }
    }
    return new FaultStats(p, failedCalls.get(), retriedCalls.get(), retriedRequests.get());
  }

  private String name(int actor) {
    if (actor < workers.size()) {
      return "generation_worker/" + actor;
    }
    return rewards.size() == 1 ? REWARD : REWARD + "/" + (actor - workers.size());
  }

  private void seen(int actor, long pid) {
    List<Long> p = pids.get(actor);
    synchronized (p) {
      if (!p.contains(pid)) {
        p.add(pid);
      }
    }
  }

  /**
   * After a call to {@code actor} failed because its process died: waits until Ray has restarted it (its
   * process id answers), and gives a restarted worker the current weights, once per new process.
   */
  private void recover(int actor, RuntimeException cause) {
    adopt(actor, restartedProcessId(actor, cause), firstLine(cause));
  }

  /**
   * Takes process {@code pid} as {@code actor}'s: if it is one not seen before, counts the restart and gives a
   * restarted worker the current weights (checking the version it answers with). Returns whether it was new.
   */
  private boolean adopt(int actor, long pid, String why) {
    List<Long> p = pids.get(actor);
    synchronized (p) {
      if (p.contains(pid)) {
        return false; // already recovered, by a call that failed on the same dead process
      }
      boolean first = p.isEmpty();
      p.add(pid);
      if (first) {
        return false; // its first process, seen before recordProcesses read it
      }
      String node = ActorNodes.nodeOf(handle(actor));
      LOG.warn("{} died ({}); Ray restarted it as pid {}{}", name(actor), why, pid,
          node == null ? "" : " on " + node);
      nodes.set(actor, node);
      Weights w = weights;
      if (actor < workers.size() && w != null) {
        long loaded = workers.get(actor).call(GenerationWorker::updateWeights, w.ref()).get();
        if (loaded != w.version()) {
          throw new IllegalStateException(name(actor) + " restarted and loaded weight version " + loaded
              + ", expected " + w.version());
        }
      }
      return true;
    }
  }

  /**
   * The process id the actor answers with once Ray has restarted it. A call issued before Ray has noticed
   * the death fails as well, so the question is asked again, every {@link #ASK_AGAIN_MS} ms, for at most
   * {@code cluster.max_restarts}'s wait, 120 s (a Python actor imports PyTorch when it restarts).
   */
  private long restartedProcessId(int actor, RuntimeException cause) {
    long deadline = System.nanoTime() + restartWaitMs * 1_000_000L;
    while (true) {
      long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000L);
      try {
        return actor >= workers.size()
            ? rewards.get(actor - workers.size()).call(RewardEnvironment::processId).get(left)
            : workers.get(actor).call(GenerationWorker::processId).get(left);
      } catch (RayActorException e) {
        if (System.nanoTime() > deadline) {
          throw notRestarted(actor, cause, e);
        }
        try {
          Thread.sleep(ASK_AGAIN_MS);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted while waiting for " + name(actor) + " to restart", ie);
        }
      } catch (RayTimeoutException | IllegalStateException e) { // a Ray call, or an in-process one, not answered
        throw notRestarted(actor, cause, e);
      }
    }
  }

  private RavelActorHandle<?> handle(int actor) {
    return actor >= workers.size() ? rewards.get(actor - workers.size()) : workers.get(actor);
  }

  private IllegalStateException notRestarted(int actor, RuntimeException cause, RuntimeException e) {
    String where = nodes.get(actor);
    return new IllegalStateException(name(actor) + (where == null ? "" : " (last on " + where + ", "
        + (ActorNodes.alive(where) ? "alive" : "now dead") + ")") + " died and Ray did not restart it within "
        + restartWaitMs / 1000.0 + " s (cluster.node_loss_timeout_s; no node left may take it, as with"
        + " generation.placement=strict_spread): " + firstLine(cause), e);
  }

  private long lastPid(int actor) {
    List<Long> p = pids.get(actor);
    synchronized (p) {
      return p.isEmpty() ? -1 : p.get(p.size() - 1);
    }
  }

  private static String firstLine(Throwable e) {
    String m = String.valueOf(e.getMessage());
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl);
  }

  /** A call issued to one actor: {@link #get} reads its result, issuing it again after the actor's death. */
  public final class Pending<R> {
    private final int actor;
    private final int requests;
    private final Supplier<RavelRef<R>> issue;
    /** Why an answer from a process not seen before cannot stand (null: it can); null for calls whose can. */
    private final java.util.function.Function<R, String> unusable;
    private final RavelRef<R> first;
    /**
     * The actor's process id, asked right after the call: Ray never hands a later call to an older process, so a call
     * a restarted process served was followed there by this question (and on an actor that serves one call at a time,
     * the answer does not wait for the caller's next calls).
     */
    private final RavelRef<Long> probe;
    private final long issuedAt;

    private Pending(int actor, int requests, Supplier<RavelRef<R>> issue,
        java.util.function.Function<R, String> unusable) {
      this.actor = actor;
      this.requests = requests;
      this.issue = issue;
      this.unusable = unusable;
      this.issuedAt = Spans.nowEpochNanos();
      this.first = issue.get();
      this.probe = actor >= workers.size()
          ? rewards.get(actor - workers.size()).call(RewardEnvironment::processId)
          : workers.get(actor).call(GenerationWorker::processId);
    }

    /**
     * The result; if the actor's process died under the call, or a process Ray restarted before the call reached it
     * answered under older weights, the call is issued again on the restarted actor, at most {@code maxRestarts}
     * times.
     *
     * @throws IllegalStateException naming the actor when it died more often than Ray restarts it
     */
    public R get() {
      long deadPid = lastPid(actor);
      String deadNode = nodes.get(actor);
      R result;
      try {
        result = first.get();
      } catch (RayActorException e) {
        failed(e, deadPid, deadNode);
        return again(e, deadPid, deadNode, false);
      }
      String why = unusable == null ? null : unusable.apply(result);
      long pid;
      try {
        pid = probe.get(restartWaitMs);
      } catch (RayActorException e) {
        // it died about when it answered: the restart is handled now, and the answer stands unless it is stale
        recover(actor, e);
        return why == null ? result : failedAgain(name(actor) + " died as it answered, and " + why, deadPid,
            deadNode);
      } catch (RayTimeoutException | IllegalStateException e) {
        throw notRestarted(actor, e, e);
      }
      if (!adopt(actor, pid, "restarted before a call reached it" + (why == null ? "" : "; " + why))
          || why == null) {
        return result;
      }
      return failedAgain(name(actor) + " was restarted as pid " + pid + " before this call reached it, and " + why,
          deadPid, deadNode);
    }

    /** A call whose answer cannot stand ({@code why}), the restart behind it handled: failed, issued again. */
    private R failedAgain(String why, long deadPid, String deadNode) {
      IllegalStateException e = new IllegalStateException(why);
      failed(e, deadPid, deadNode);
      return again(e, deadPid, deadNode, true);
    }

    private void failed(RuntimeException e, long deadPid, String deadNode) {
      failedCalls.incrementAndGet();
      var failed = Attributes.builder().put(RavelAttributes.FAULT_ACTOR, name(actor))
          .put(RavelAttributes.FAULT_ATTEMPT, 1L).put(RavelAttributes.FAULT_DEAD_PID, deadPid)
          .put(RavelAttributes.NUM_REQUESTS, (long) requests);
      if (deadNode != null) {
        failed.put(RavelAttributes.FAULT_NODE, deadNode);
      }
      spans.failed(SpanGroup.WORKER, SpanNames.FAULT_FAILED_CALL, issuedAt, e, failed.build());
    }

    /** Issues the call again after its first try failed with {@code cause} ({@code recovered}: the restart handled). */
    private R again(RuntimeException cause, long deadPid, String deadNode, boolean recovered) {
      RuntimeException last = cause;
      for (long attempt = 2; attempt <= maxRestarts + 1L; attempt++) {
        if (!recovered) {
          recover(actor, last);
        }
        recovered = false;
        retriedCalls.incrementAndGet();
        retriedRequests.addAndGet(requests);
        deadPid = lastPid(actor);
        try (ScopedSpan s = spans.start(SpanGroup.WORKER, SpanNames.FAULT_RETRY)) {
          s.set(RavelAttributes.FAULT_ACTOR, name(actor)).set(RavelAttributes.FAULT_ATTEMPT, attempt)
              .set(RavelAttributes.NUM_REQUESTS, (long) requests);
          if (deadNode != null) { // where the process that died ran, and whether its node died with it
            s.set(RavelAttributes.FAULT_NODE, deadNode)
                .set(RavelAttributes.FAULT_NODE_DEAD, !ActorNodes.alive(deadNode));
          }
          deadNode = nodes.get(actor);
          try {
            return issue.get().get();
          } catch (RayActorException again) {
            failedCalls.incrementAndGet();
            s.set(RavelAttributes.FAULT_DEAD_PID, deadPid).error(again);
            last = again;
          }
        }
      }
      throw new IllegalStateException(name(actor) + (maxRestarts == 0 ? " died and is not restarted"
          : " died " + (maxRestarts + 1) + " times under one call") + " (cluster.max_restarts=" + maxRestarts
          + "): " + firstLine(last), last);
    }
  }
}
