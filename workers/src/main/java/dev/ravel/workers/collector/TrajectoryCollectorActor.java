package dev.ravel.workers.collector;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.context.SpanLink;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.buffer.ReplayBuffer;
import dev.ravel.workers.buffer.Rollout;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.fault.FaultStats;
import dev.ravel.workers.fault.Failover;
import io.ray.api.ObjectRef;
import dev.ravel.workers.generation.StepBatch;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import dev.ravel.workers.task.PromptSource;
import io.opentelemetry.context.Context;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link TrajectoryCollector}: a loop thread per collector and a pool for concurrent generate calls. */
public final class TrajectoryCollectorActor extends RavelActor implements TrajectoryCollector {
  private static final Logger LOG = LoggerFactory.getLogger(TrajectoryCollectorActor.class);

  private final CollectorSpec spec;
  private final Tokenizer tokenizer = CharTokenizer.arithmetic();
  private final ArithmeticTask task = ArithmeticTask.standard();
  private final LinkedBlockingQueue<Target> targets = new LinkedBlockingQueue<>();
  private final ExecutorService calls;
  private final Thread loop;
  private final Object gate = new Object();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicLong targetsDone = new AtomicLong();
  private final AtomicLong groups = new AtomicLong();
  private final AtomicLong trajectories = new AtomicLong();
  private final AtomicLong generateCalls = new AtomicLong();
  private final AtomicLong rewardCalls = new AtomicLong();
  private final AtomicLong bufferCalls = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private volatile String lastError = "";
  private volatile long version = -1;
  private volatile boolean paused = true;
  private volatile boolean stopped;
  private long nextTarget;
  private final Failover failover;
  private boolean processesRecorded;

  public TrajectoryCollectorActor(Payload<CollectorSpec> specPayload) {
    CollectorSpec spec = specPayload.value();
    this.spec = spec;
    this.nextTarget = spec.firstTarget();
    this.failover = new Failover(spans(), spec.maxRestarts(), spec.workers(), spec.rewards(), spec.restartWaitMs());
    this.calls = Executors.newFixedThreadPool(spec.maxInFlight(), r -> {
      Thread t = new Thread(r, "collector-call");
      t.setDaemon(true);
      return t;
    });
    this.loop = new Thread(this::run, "collector-loop");
    loop.setDaemon(true);
    loop.start();
  }

  @Override
  public int publish(long newVersion, ObjectRef<?> weights) {
    Context published = Context.current();
    int scheduled = 0;
    synchronized (gate) {
      if (!processesRecorded) { // the workers are up by the first publish (the driver waited for them)
        failover.recordProcesses();
        processesRecorded = true;
      }
      failover.weights(weights, newVersion);
      version = newVersion;
      for (; nextTarget <= newVersion + spec.lead() - 1; nextTarget++) {
        targets.add(new Target(nextTarget, newVersion, published));
        scheduled++;
      }
      paused = false;
      gate.notifyAll();
    }
    return scheduled;
  }

  @Override
  public int pause(long timeoutMs) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    synchronized (gate) {
      paused = true;
      while (inFlight.get() > 0 && System.nanoTime() < deadline) {
        try {
          gate.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      return inFlight.get();
    }
  }

  @Override
  public CollectorStats stats() {
    return new CollectorStats(targetsDone.get(), groups.get(), trajectories.get(), generateCalls.get(),
        rewardCalls.get(), bufferCalls.get(), inFlight.get(), failures.get(), lastError);
  }

  @Override
  public FaultStats faults() {
    return failover.stats();
  }

  @Override
  public CollectorStats stop() {
    stopped = true;
    // let the calls in flight finish so that their spans end; issue no new ones
    long deadline = System.nanoTime() + 30_000_000_000L;
    synchronized (gate) {
      gate.notifyAll();
      while (inFlight.get() > 0 && System.nanoTime() < deadline) {
        try {
          gate.wait(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    calls.shutdown();
    try {
      loop.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (loop.isAlive()) {
      loop.interrupt();
    }
    return stats();
  }

  private void run() {
    while (!stopped) {
      Target t;
      try {
        t = targets.poll(200, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        return;
      }
      if (t == null) {
        continue;
      }
      try {
        generateTarget(t);
        targetsDone.incrementAndGet();
      } catch (RuntimeException e) {
        if (stopped) {
          return; // the run ended: this target's groups are abandoned (generated ahead, never trained on)
        }
        lastError = e.getMessage() == null ? e.toString() : e.getMessage();
        failures.incrementAndGet();
        LOG.warn("collector: generation for step {} failed: {}", t.step, e.toString());
      }
    }
  }

  /**
   * One target step's groups, in a {@code rl.grpo.generation} span under the publishing step: one generate
   * call per chunk of {@code groupsPerCall} groups, round robin over the workers, all in flight at once; each
   * chunk is scored and its groups pushed to the replay buffer as soon as its call returns, not when the
   * whole step's batch is done.
   */
  private void generateTarget(Target t) {
    try (ScopedSpan s = spans().start(Phase.GENERATION, t.parent)) {
      s.set(RavelAttributes.GENERATION_MODE, "async")
          .set(RavelAttributes.WEIGHT_VERSION, t.version)
          .set(RavelAttributes.TARGET_WEIGHT_VERSION, t.step);
      StepBatch batch = StepBatch.plan(spec.data() != null ? spec.data() : PromptSource.of(task, tokenizer),
          spec.promptsPerStep(), spec.groupSize(), spec.sampling(), spec.seed(), t.step);
      Context here = Context.current();
      CompletionService<Chunk> done = new ExecutorCompletionService<>(calls);
      List<Future<Chunk>> futures = new ArrayList<>();
      int groupsTotal = batch.problems().size();
      for (int from = 0, call = 0; from < groupsTotal; from += spec.groupsPerCall(), call++) {
        int first = from;
        int last = Math.min(groupsTotal, from + spec.groupsPerCall());
        int worker = call % spec.workers().size();
        futures.add(done.submit(here.wrap(() -> generateChunk(batch, first, last, worker, t.step))));
      }
      try {
        for (int i = 0; i < futures.size(); i++) {
          push(batch, t, await(take(done)));
        }
      } catch (RuntimeException e) {
        futures.forEach(x -> x.cancel(false)); // the target is lost: issue nothing more for it
        throw e;
      }
    }
  }

  /** Scores one returned chunk and pushes its groups to the buffer, each naming the call that produced it. */
  private void push(StepBatch batch, Target t, Chunk c) {
    rewardCalls.incrementAndGet();
    dev.ravel.workers.reward.RewardScores scores = failover.score(batch.problemPerRequest(c.from, c.to),
        c.results.stream().map(GenerationResult::completionTokens).toList(), t.step + 1); // numbered from 1
    List<Trajectory> made = batch.trajectories(c.from, c.to, c.results, scores);
    int g = spec.groupSize();
    List<Rollout> rollouts = new ArrayList<>();
    for (int p = c.from; p < c.to; p++) {
      int at = (p - c.from) * g;
      long oldest = c.versionAtCall;
      for (GenerationResult r : c.results.subList(at, at + g)) {
        oldest = Math.min(oldest, r.oldestWeightVersion()); // tokens sampled before an in-flight update count
      }
      rollouts.add(new Rollout(batch.problems().get(p), made.subList(at, at + g), oldest, t.step,
          java.util.Collections.nCopies(g, c.span)));
      groups.incrementAndGet();
      trajectories.addAndGet(g);
    }
    bufferCalls.incrementAndGet();
    spec.buffer().call(ReplayBuffer::push, rollouts).get();
  }

  /**
   * One generate call for groups {@code [from, to)} of a target step, wrapped in {@code rl.vllm.generate};
   * waits while the collector is paused.
   */
  private Chunk generateChunk(StepBatch batch, int from, int to, int worker, long step) throws InterruptedException {
    synchronized (gate) {
      while (paused && !stopped) {
        gate.wait(200);
      }
      if (stopped) {
        throw new java.util.concurrent.CancellationException("collector stopped");
      }
      inFlight.incrementAndGet();
    }
    long v = version;
    List<GenerationRequest> requests = batch.requests(from, to);
    try (ScopedSpan s = spans().start(SpanGroup.GENERATION, SpanNames.VLLM_GENERATE)) {
      s.set(RavelAttributes.GENERATION_MODE, "async")
          .set(RavelAttributes.WEIGHT_VERSION, v)
          .set(RavelAttributes.TARGET_WEIGHT_VERSION, step)
          .set(RavelAttributes.NUM_PROMPTS, (long) (to - from))
          .set(RavelAttributes.NUM_REQUESTS, (long) requests.size());
      generateCalls.incrementAndGet();
      // a worker whose process died is restarted by Ray, given the published weights and asked again
      List<GenerationResult> results = failover.generate(worker, true, requests).get();
      if (results.size() != requests.size()) {
        throw new IllegalStateException("worker " + worker + " returned " + results.size() + " results for "
            + requests.size() + " requests");
      }
      results.forEach(GenerationResult::requireSucceeded);
      return new Chunk(from, to, results, s.asLink(), v);
    } finally {
      synchronized (gate) {
        inFlight.decrementAndGet();
        gate.notifyAll();
      }
    }
  }

  private static Future<Chunk> take(CompletionService<Chunk> done) {
    try {
      return done.take();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  private static Chunk await(Future<Chunk> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable c = e.getCause();
      throw c instanceof RuntimeException re ? re : new IllegalStateException(c);
    }
  }

  private record Target(long step, long version, Context parent) {}

  /** One returned call: groups {@code [from, to)}, their results in request order, the call's span. */
  private record Chunk(int from, int to, List<GenerationResult> results, SpanLink span, long versionAtCall) {}
}
