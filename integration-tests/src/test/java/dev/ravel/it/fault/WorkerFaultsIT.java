package dev.ravel.it.fault;

import dev.ravel.telemetry.process.ProcessIdentity;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.grpo.GrpoRun;
import dev.ravel.driver.grpo.StepListener;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.spans.Phase;
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
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A generation worker's process killed with SIGKILL, by its PID, in step 3 (sync: as its generation is about to
 * begin; async: as the driver waits on the buffer, the collector generating), through the run's phase hook, on a
 * real Ray head: Ray
 * restarts it, the driver (sync) or the collector (async) gives it the current weights and issues the lost
 * call again with the same requests, and the run completes with every step's full batch. In the sync run the
 * reward environment's process is killed too, as a later step's reward phase is about to begin (its exit waited on),
 * and that step's score call is issued again on its restarted process.
 */
final class WorkerFaultsIT {
  private static final int STEPS = 6;
  private static final int PROMPTS = 16;
  private static final int GROUP = 8;
  private static final int WORKERS = 2;
  /** The step after which the kill is armed (1-based), the worker's process identity taken then. */
  private static final int ARMED_AFTER = 2;
  /** The step worker 1 dies in (sync: killed as its generation is about to begin; async: as it waits on the buffer). */
  private static final long KILLED_IN = ARMED_AFTER + 1;
  /**
   * The step whose reward phase the reward environment dies in (sync): killed as the phase is about to begin, its exit
   * waited on. The score call then finds it dead, or (Ray quicker than the call) reaches the restarted process; the
   * restart is counted either way, since every answer is checked for the process that gave it.
   */
  private static final int REWARD_KILLED_IN = 5;

  @TempDir
  Path runs;

  private record Finished(List<StepRecord> steps, FaultStats faults, long killedPid, String killerNote,
      ProcessIdentity target, long rewardKilledPid, RunTraces traces, CollectorStats collector, BufferStats buffer,
      RunConfig config) {}


  private Finished runKillingWorker1(String runId, String mode) throws Exception {
    RunConfig config = RunConfig.load(null, List.of("run.mode=" + mode, "grpo.steps=" + STEPS,
        "grpo.prompts_per_step=" + PROMPTS, "grpo.group_size=" + GROUP, "generation.workers=" + WORKERS,
        "grpo.max_new_tokens=48", "generation.ignore_eos=true", "model.java_hidden=512", "grpo.kl_beta=0",
        "telemetry.preset=per_step", "telemetry.run_id=" + runId, "telemetry.runs_dir=" + runs), TestEnv.clean());
    DriverSession session = DriverSession.builder(config.telemetry()).env(SharedRayHead.env())
        .workerJvmOptions(List.of("-Xmx384m", "-XX:+UseSerialGC")).start();
    AtomicReference<GrpoRun> run = new AtomicReference<>();
    AtomicLong killed = new AtomicLong(-1);
    AtomicReference<String> killerNote = new AtomicReference<>("the killer was not armed");
    AtomicReference<ProcessIdentity> target = new AtomicReference<>();
    AtomicLong rewardKilled = new AtomicLong(-1);
    StepListener listener = (m, total) -> {
      if (m.step() == ARMED_AFTER) {
        long pid = run.get().faults().processes().get("generation_worker/1").get(0);
        // its identity is taken now, while the worker has just served this step: it names that process only,
        // so the SIGKILL can never reach a later holder of the PID
        ProcessIdentity worker = ProcessIdentity.of(pid).orElse(null);
        target.set(worker);
        killerNote.set("worker pid " + pid + " had ended before the killer was armed");
      }
    };
    List<StepRecord> steps;
    try {
      // worker 1 killed as step KILLED_IN's phase begins (sync: its generation; async: its wait on the buffer, while
      // the collector generates on), and its exit waited on: that step's generate call to it (sync) or the
      // collector's call in flight or next (async) finds it dead, however fast the machine is
      Phase at = mode.equals("sync") ? Phase.GENERATION : Phase.BUFFER_STARVATION;
      run.set(new GrpoRun(session, config, listener).phaseHook((step, phase) -> {
        if (step == KILLED_IN && phase == at && target.get() != null && killed.get() < 0) {
          ProcessIdentity worker = target.get();
          if (worker.kill()) {
            killed.set(worker.pid());
            killerNote.set("worker pid " + worker.pid() + " killed as step " + step + "'s " + phase.label()
                + " began");
            ProcessHandle.of(worker.pid()).ifPresent(h -> h.onExit().join());
          }
        }
        if (step == REWARD_KILLED_IN && phase == Phase.REWARD && mode.equals("sync") && rewardKilled.get() < 0) {
          // the reward environment, as the step's score call is about to go out: that call finds it dead
          long pid = run.get().faults().processes().get("reward_environment").get(0);
          ProcessIdentity env = ProcessIdentity.of(pid).orElseThrow(
              () -> new AssertionError("reward environment pid " + pid + " had ended before its kill"));
          if (env.kill()) {
            rewardKilled.set(pid);
            ProcessHandle.of(pid).ifPresent(h -> h.onExit().join());
          }
        }
      }));
      steps = run.get().run();
    } finally {
      session.close();
    }
    GrpoRun r = run.get();
    return new Finished(steps, r.faults(), killed.get(), killerNote.get(), target.get(), rewardKilled.get(),
        RunTraces.readDir(config.telemetry().runDir()), r.collectorStats(), r.bufferStats(), config);
  }

  @Test
  void sync_workerKilledWhileGenerating_isRestartedWithTheWeightsAndItsRequestsAreIssuedAgainOnce() throws Exception {
    Finished f = runKillingWorker1("it-fault-sync", "sync");

    // The kill landed in step 3's generation, by construction rather than timing: the run's phase hook killed worker
    // 1 as that phase was about to begin (after the step's refit) and waited for its exit. Its generate call then
    // either found it dead, or (Ray quicker than the call) reached the restarted process, which answered under the
    // initial weights: either way that one call failed, the new process was given the step's weights, and the call's
    // whole share went again once. The reward environment, killed as step 5's reward phase began, is restarted and
    // counted either way; its score call failed and went again, or had reached the restarted process (whose scores
    // stand: it holds no state).
    assertThat(f.killedPid()).as(f.killerNote()).isPositive();
    // gone, by its handle (PID and start time): its PID may since have been given to another process
    assertThat(f.target().isAlive()).as("the killed worker process").isFalse();
    assertThat(f.steps()).hasSize(STEPS).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP));
    assertThat(Files.readAllLines(f.config().telemetry().runDir().resolve("steps.jsonl"))).hasSize(STEPS);
    FaultStats faults = f.faults();
    assertThat(faults.processes().get("generation_worker/1")).hasSize(2).first().isEqualTo(f.killedPid());
    assertThat(faults.processes().get("generation_worker/0")).hasSize(1);
    // the worker and the reward environment, once each
    assertThat(faults.processes().get("reward_environment")).hasSize(2).first().isEqualTo(f.rewardKilledPid());
    assertThat(faults.restarts()).isEqualTo(2);

    List<SpanRecord> failed = f.traces().named(SpanNames.FAULT_FAILED_CALL);
    List<SpanRecord> retries = f.traces().named(SpanNames.FAULT_RETRY);
    assertThat(failed).hasSize((int) faults.failedCalls()).allSatisfy(x -> assertThat(x.isError()).isTrue());
    assertThat(retries).hasSize((int) faults.retriedCalls());
    List<SpanRecord> rewardFails = failed.stream()
        .filter(x -> "reward_environment".equals(x.attribute(RavelAttributes.FAULT_ACTOR))).toList();
    assertThat(rewardFails).hasSizeLessThanOrEqualTo(1).allSatisfy(
        x -> assertThat(byId(f.traces(), x.parentSpanId()).name()).isEqualTo("rl.grpo.reward_calculation"));
    assertThat(faults.failedCalls()).isEqualTo(1 + rewardFails.size());
    assertThat(faults.retriedCalls()).isEqualTo(faults.failedCalls());
    // the dead worker's whole share of the step, issued again once (a score call carries no generation request)
    assertThat(faults.retriedRequests()).isEqualTo(PROMPTS * GROUP / WORKERS);

    SpanRecord fail = failed.stream().filter(x -> !rewardFails.contains(x)).findFirst().orElseThrow();
    SpanRecord retry = retries.stream().filter(x -> fail.parentSpanId().equals(x.parentSpanId())).findFirst().orElseThrow();
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
    assertThat((Long) step.attribute(RavelAttributes.STEP)).isEqualTo(KILLED_IN);
    // the new process was given the step's weights before its answers were used (the loop checks every result's
    // version) and served every later step's generate call too
    long newPid = faults.processes().get("generation_worker/1").get(1);
    assertThat(f.traces().named("rl.worker.generate").stream()
        .filter(s -> Long.valueOf(newPid).equals(s.resourceAttribute(RavelAttributes.PROCESS_PID)))
        .map(SpanRecord::traceId).distinct().count())
        .isEqualTo(STEPS - (Long) step.attribute(RavelAttributes.STEP) + 1);
    assertThat(TraceQuality.of(f.traces().spans()).connectedness()).hasValue(1.0);
  }

  @Test
  void async_workerKilledWhileGenerating_noTrajectoryIsLostOrTrainedTwice() throws Exception {
    Finished f = runKillingWorker1("it-fault-async", "async");

    assertThat(f.killedPid()).as(f.killerNote()).isPositive();
    assertThat(f.steps()).hasSize(STEPS).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP));
    FaultStats faults = f.faults();
    assertThat(faults.restarts()).isEqualTo(1);
    assertThat(faults.processes().get("generation_worker/1")).hasSize(2).first().isEqualTo(f.killedPid());
    // the next call to worker 1 finds it dead, or reaches its restarted process: a collector's generate call (its
    // answer under the initial weights dropped, its requests issued again) or the driver's weight update (which
    // loads the new process). Either way the restart is counted once, and every request issued again is in a
    // retry span
    assertThat(faults.retriedCalls()).isEqualTo(f.traces().named(SpanNames.FAULT_RETRY).size());
    assertThat(faults.retriedRequests()).isEqualTo(f.traces().named(SpanNames.FAULT_RETRY).stream()
        .mapToLong(r -> (Long) r.attribute(RavelAttributes.NUM_REQUESTS)).sum());
    assertThat(f.traces().named(SpanNames.FAULT_FAILED_CALL)).hasSize((int) faults.failedCalls())
        .allSatisfy(s -> assertThat(s.isError()).isTrue());
    // every group the collector pushed was taken by exactly one step, dropped for its age, or is still queued
    BufferStats b = f.buffer();
    assertThat(b.pushed()).isEqualTo(f.collector().groups());
    assertThat(b.taken() + b.droppedForAge() + b.size()).isEqualTo(b.pushed());
    assertThat(b.taken()).isEqualTo((long) STEPS * PROMPTS);
    long trained = f.steps().stream().mapToLong(StepRecord::trajectories).sum();
    assertThat(trained).isEqualTo(b.taken() * GROUP);
  }

  private static SpanRecord byId(RunTraces traces, String spanId) {
    return traces.spans().stream().filter(s -> s.spanId().equals(spanId)).findFirst().orElseThrow();
  }
}
