package dev.ravel.it.fault;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.grpo.GrpoRun;
import dev.ravel.driver.grpo.StepListener;
import dev.ravel.driver.grpo.StepMetrics;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.Procs;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import dev.ravel.workers.buffer.BufferStats;
import dev.ravel.workers.collector.CollectorStats;
import dev.ravel.workers.fault.FaultStats;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A generation worker's process killed with SIGKILL, by its PID, while it generates, on a real Ray head: Ray
 * restarts it, the driver (sync) or the collector (async) gives it the current weights and issues the lost
 * call again with the same requests, and the run completes with every step's full batch. In the sync run the
 * reward environment's process is killed too, between two steps, and the next step's score call is issued
 * again on its restarted process.
 */
final class WorkerFaultsIT {
  private static final int STEPS = 6;
  private static final int PROMPTS = 16;
  private static final int GROUP = 8;
  private static final int WORKERS = 2;
  /** The step after which the kill is armed (1-based): it lands in the next step's generation. */
  private static final int ARMED_AFTER = 2;
  /** The step after which the reward environment is killed (sync). */
  private static final int REWARD_KILLED_AFTER = 4;
  /** CPU ticks (1/100 s) the worker must burn in 160 ms right before the kill (half a core): it is generating. */
  private static final long BUSY_TICKS = 8;
  private static final int WINDOW = 9;

  @TempDir
  Path runs;

  private record Finished(List<StepMetrics> steps, FaultStats faults, long killedPid, long rewardKilledPid,
      RunTraces traces, CollectorStats collector, BufferStats buffer, RunConfig config) {}

  private Finished runKillingWorker1(String runId, String mode) throws Exception {
    RunConfig config = RunConfig.load(null, List.of("run.mode=" + mode, "grpo.steps=" + STEPS,
        "grpo.prompts_per_step=" + PROMPTS, "grpo.group_size=" + GROUP, "generation.workers=" + WORKERS,
        "grpo.max_new_tokens=48", "generation.ignore_eos=true", "model.java_hidden=512", "grpo.kl_beta=0",
        "telemetry.preset=per_step", "telemetry.run_id=" + runId, "telemetry.runs_dir=" + runs), TestEnv.clean());
    DriverSession session = DriverSession.builder(config.telemetry()).env(TestEnv.clean())
        .workerJvmOptions(List.of("-Xmx384m", "-XX:+UseSerialGC")).start();
    AtomicReference<GrpoRun> run = new AtomicReference<>();
    AtomicLong killed = new AtomicLong(-1);
    AtomicLong rewardKilled = new AtomicLong(-1);
    List<Thread> killers = new ArrayList<>();
    StepListener listener = (m, total) -> {
      if (m.step() == ARMED_AFTER) {
        long pid = run.get().faults().processes().get("generation_worker/1").get(0);
        // sync: well into the next step's generation, by this step's phase times (the next step's refit
        // and data are short, its generation as long as this one's); async: the step has just refit and
        // published, so the collector's calls for the next target are being generated now (most often:
        // the kill may also find the collector paused for a refit)
        boolean sync = mode.equals("sync");
        long delayMs = sync ? (long) (1000 * (2 * (m.phases().getOrDefault("data", 0.0)
            + m.phases().getOrDefault("refit", 0.0)) + 0.35 * m.phases().get("generation"))) : 50;
        long busyTicks = BUSY_TICKS;
        System.out.println("fault: killing pid " + pid + " in " + delayMs + " ms; step " + m.step() + " phases " + m.phases());
        Thread t = new Thread(() -> killWhenBusy(pid, delayMs, busyTicks, killed), "killer");
        t.setDaemon(true);
        t.start();
        killers.add(t);
      }
      if (m.step() == REWARD_KILLED_AFTER && mode.equals("sync")) {
        // the reward environment, between steps: the next step's score call finds it dead
        long pid = run.get().faults().processes().get("reward_environment").get(0);
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        rewardKilled.set(pid);
      }
    };
    List<StepMetrics> steps;
    try {
      run.set(new GrpoRun(session, config, listener));
      steps = run.get().run();
    } finally {
      session.close();
    }
    for (Thread t : killers) {
      t.join(5_000);
    }
    GrpoRun r = run.get();
    return new Finished(steps, r.faults(), killed.get(), rewardKilled.get(), RunTraces.readDir(config.telemetry().runDir()),
        r.collectorStats(), r.bufferStats(), config);
  }

  /**
   * After {@code delayMs}, waits (bounded) until {@code pid} is computing, {@code busyTicks} of CPU in the
   * last {@link #WINDOW} samples 20 ms apart (a generate call; a weight load or a stats call is a short
   * burst), then kills it with SIGKILL.
   */
  private static void killWhenBusy(long pid, long delayMs, long busyTicks, AtomicLong killed) {
    try {
      Thread.sleep(delayMs);
      java.util.ArrayDeque<Long> window = new java.util.ArrayDeque<>();
      for (int i = 0; i < 3000; i++) {
        window.addLast(cpuTicks(pid));
        if (window.size() > WINDOW) {
          window.removeFirst();
        }
        if (window.size() == WINDOW && window.getLast() - window.getFirst() >= busyTicks) {
          break;
        }
        Thread.sleep(20);
      }
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly); // SIGKILL to that PID only
      killed.set(pid);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** utime + stime of {@code pid}, from {@code /proc/<pid>/stat}. */
  private static long cpuTicks(long pid) throws Exception {
    String stat = Files.readString(Path.of("/proc", String.valueOf(pid), "stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  @Test
  void sync_workerKilledWhileGenerating_isRestartedWithTheWeightsAndItsRequestsAreIssuedAgainOnce() throws Exception {
    Finished f = runKillingWorker1("it-fault-sync", "sync");

    assertThat(f.killedPid()).isPositive();
    assertThat(Procs.alive(List.of(f.killedPid()))).isEmpty();
    assertThat(f.steps()).hasSize(STEPS).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP));
    assertThat(Files.readAllLines(f.config().telemetry().runDir().resolve("steps.jsonl"))).hasSize(STEPS);
    FaultStats faults = f.faults();
    assertThat(faults.processes().get("generation_worker/1")).hasSize(2).first().isEqualTo(f.killedPid());
    assertThat(faults.processes().get("generation_worker/0")).hasSize(1);
    // the worker and the reward environment, once each
    assertThat(faults.processes().get("reward_environment")).hasSize(2).first().isEqualTo(f.rewardKilledPid());
    assertThat(faults.restarts()).isEqualTo(2);
    assertThat(faults.failedCalls()).isEqualTo(2);
    assertThat(faults.retriedCalls()).isEqualTo(2);
    // the dead worker's whole share of the step, issued again once (a score call carries no generation request)
    assertThat(faults.retriedRequests()).isEqualTo(PROMPTS * GROUP / WORKERS);

    List<SpanRecord> failed = f.traces().named(SpanNames.FAULT_FAILED_CALL);
    List<SpanRecord> retries = f.traces().named(SpanNames.FAULT_RETRY);
    assertThat(failed).hasSize(2);
    assertThat(retries).hasSize(2);
    SpanRecord rewardFail = failed.stream().filter(x -> "reward_environment".equals(x.attribute(RavelAttributes.FAULT_ACTOR)))
        .findFirst().orElseThrow();
    assertThat(byId(f.traces(), rewardFail.parentSpanId()).name()).isEqualTo("rl.grpo.reward_calculation");
    SpanRecord fail = failed.stream().filter(x -> x != rewardFail).findFirst().orElseThrow();
    SpanRecord retry = retries.stream().filter(x -> fail.parentSpanId().equals(x.parentSpanId())).findFirst().orElseThrow();
    assertThat(fail.isError()).isTrue();
    assertThat(fail.events()).extracting(SpanRecord.Event::name).contains("exception");
    assertThat(fail.attribute(RavelAttributes.FAULT_DEAD_PID)).isEqualTo(f.killedPid());
    assertThat(fail.attribute(RavelAttributes.FAULT_ACTOR)).isEqualTo("generation_worker/1");
    // both under the step's generate call, in the step's trace; the retried call is served under the retry
    SpanRecord generate = byId(f.traces(), fail.parentSpanId());
    assertThat(generate.name()).isEqualTo(SpanNames.VLLM_GENERATE);
    assertThat(retry.parentSpanId()).isEqualTo(generate.spanId());
    assertThat(retry.isError()).isFalse();
    List<SpanRecord> served = f.traces().spans().stream().filter(s -> retry.spanId().equals(s.parentSpanId())).toList();
    assertThat(served).extracting(SpanRecord::name).containsExactly("rl.worker.generate");
    assertThat(served.get(0).resourceAttribute(RavelAttributes.PROCESS_PID))
        .isEqualTo(faults.processes().get("generation_worker/1").get(1));
    SpanRecord step = f.traces().named("rl.grpo.step").stream().filter(s -> s.traceId().equals(fail.traceId()))
        .findFirst().orElseThrow();
    assertThat(step.isError()).isFalse(); // the step recovered
    assertThat((Long) step.attribute(RavelAttributes.STEP)).isGreaterThan((long) ARMED_AFTER);
    // the new process was given the step's weights before it served (the loop checks every result's version)
    // and served the later steps' generate calls too
    long newPid = faults.processes().get("generation_worker/1").get(1);
    assertThat(f.traces().named("rl.worker.generate").stream()
        .filter(s -> Long.valueOf(newPid).equals(s.resourceAttribute(RavelAttributes.PROCESS_PID))).count())
        .isEqualTo(STEPS - (Long) step.attribute(RavelAttributes.STEP) + 1);
    assertThat(TraceQuality.of(f.traces().spans()).connectedness()).isEqualTo(1.0);
  }

  @Test
  void async_workerKilledWhileGenerating_noTrajectoryIsLostOrTrainedTwice() throws Exception {
    Finished f = runKillingWorker1("it-fault-async", "async");

    assertThat(f.killedPid()).isPositive();
    assertThat(f.steps()).hasSize(STEPS).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP));
    FaultStats faults = f.faults();
    assertThat(faults.restarts()).isEqualTo(1);
    assertThat(faults.processes().get("generation_worker/1")).hasSize(2).first().isEqualTo(f.killedPid());
    assertThat(faults.failedCalls()).isGreaterThanOrEqualTo(1);
    // the kill lands in the collector's generate calls (their requests issued again) or, when the collector
    // was paused, in the driver's weight update: either way every request issued again is in a retry span
    assertThat(faults.retriedRequests()).isEqualTo(f.traces().named(SpanNames.FAULT_RETRY).stream()
        .mapToLong(r -> (Long) r.attribute(RavelAttributes.NUM_REQUESTS)).sum());
    assertThat(f.traces().named(SpanNames.FAULT_FAILED_CALL)).hasSize((int) faults.failedCalls())
        .allSatisfy(s -> assertThat(s.isError()).isTrue());
    // every group the collector pushed was taken by exactly one step, dropped for its age, or is still queued
    BufferStats b = f.buffer();
    assertThat(b.pushed()).isEqualTo(f.collector().groups());
    assertThat(b.taken() + b.droppedForAge() + b.size()).isEqualTo(b.pushed());
    assertThat(b.taken()).isEqualTo((long) STEPS * PROMPTS);
    long trained = f.steps().stream().mapToLong(StepMetrics::trajectories).sum();
    assertThat(trained).isEqualTo(b.taken() * GROUP);
  }

  private static SpanRecord byId(RunTraces traces, String spanId) {
    return traces.spans().stream().filter(s -> s.spanId().equals(spanId)).findFirst().orElseThrow();
  }
}
