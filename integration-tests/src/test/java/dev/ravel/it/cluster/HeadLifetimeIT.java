package dev.ravel.it.cluster;

import dev.ravel.telemetry.process.ProcessIdentity;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.jobs.JobInfo;
import dev.ravel.driver.jobs.JobStatus;
import dev.ravel.driver.jobs.JobsClient;
import dev.ravel.driver.session.RayVersions;
import dev.ravel.it.support.PhaseHold;
import dev.ravel.it.support.Procs;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A local head that the driver started lives exactly as long as the driver: SIGTERM, SIGINT or SIGKILL to
 * a running {@code bin/ravel run}, and no process of that head remains (by its PIDs with their start times,
 * and by its process group), SIGTERM and SIGINT after the step in progress ended, the spans were flushed and
 * run.json says {@code interrupted}; the stopped run resumes from the step it stopped at (a Java trainer's
 * checkpoint after SIGTERM, a Python trainer's after SIGINT), and the next run, with a head of its own, succeeds;
 * a head the driver did not start survives the driver's SIGKILL. The
 * waits are bounded generously (see {@link #KILL_BOUND_S}): what is asserted is that the head goes, not how
 * fast a loaded machine stops it.
 */
final class HeadLifetimeIT {
  private static final Pattern HEAD = Pattern.compile("Ray head started at 127\\.0\\.0\\.1:(\\d+) \\(pid (\\d+),");
  /**
   * How long the head may take to be gone after the driver's SIGKILL: its supervisor polls for the driver
   * every 0.5 s, then gives the head's group up to 4 s after SIGTERM before SIGKILL, typically about 5 s in
   * all; ten times that and more.
   */
  private static final long KILL_BOUND_S = 60;
  /** The step before whose generation each driver is held and signalled (steps 1 to 3 done). */
  private static final long HELD_STEP = 4;
  /** After SIGTERM or SIGINT: the step in progress ends and the spans are flushed before the head stops. */
  private static final long TERM_BOUND_S = 120;
  /**
   * The runs here are about processes and checkpoints, not learning or scale: one generation worker (each worker
   * is a process of the head like the others, each start a JVM or a PyTorch import) and small steps, the same for
   * a signalled run and its resume.
   */
  private static final String[] SYNC = {"generation.workers=1", "grpo.prompts_per_step=8", "grpo.group_size=4"};
  /** The Python run kept small too (its steps are PyTorch's on CPU). */
  private static final String[] PYTHON_SMALL = {"generation.workers=1", "grpo.prompts_per_step=8",
      "grpo.group_size=4", "telemetry.engine_tracing=false"};

  @TempDir
  Path tmp;

  /**
   * SIGTERM to a driver of Ravel's Java workers (examples/grpo-sync.yaml), then SIGKILL to another: neither head
   * leaves a process behind, and the run stopped by SIGTERM goes on from the step it stopped at (the hint it printed
   * is true: the Java trainer checkpointed that step). The resumed run, a driver with a head of its own started after
   * both signalled drivers and their heads are gone, is also the next run that succeeds after each signal. (One test
   * rather than one per signal: the resume serves as the run after both; a SIGKILLed driver leaves nothing to resume.)
   */
  @Test
  void driverTermedThenAnotherKilled_noProcessOfEitherHeadRemainsAndTheNextRunSucceeds() throws Exception {
    Stopped termed = signalled("TERM", "examples/grpo-sync.yaml", tmp.resolve("runs-term"), SYNC);
    signalled("KILL", "examples/grpo-sync.yaml", tmp.resolve("runs-kill"), SYNC);
    resumes(termed);
  }

  /**
   * SIGINT to a driver of Ravel's Python workers (examples/grpo-python.yaml; their processes are the head's too): no
   * process of its head remains, and the run goes on from the step it stopped at (the Python trainer checkpointed
   * it); the resumed run, a driver with a head of its own, is the next run that succeeds after the signal.
   */
  @Test
  void pythonDriverInterrupted_noProcessOfItsHeadRemainsAndTheStoppedStepIsCheckpointedAndTheRunResumes()
      throws Exception {
    resumes(signalled("INT", "examples/grpo-python.yaml", tmp.resolve("runs-int"), PYTHON_SMALL));
  }

  /** A run whose driver was signalled and has ended, its head gone; {@code steps} is 0 after SIGKILL. */
  private record Stopped(String example, String[] overrides, Path runsDir, Path runDir, int steps) {}

  /**
   * Starts {@code example} with a head of the driver's own, sends SIG{@code signal} to the driver while it is held
   * before step 4's generation ({@link PhaseHold}; then lets the step go on), and asserts that no process of that head remains, and what the driver left: after SIGTERM or SIGINT the
   * step in progress ended, the completed steps' spans were flushed, run.json says {@code interrupted}, the driver
   * printed how to go on and ended as the signal's process does; after SIGKILL, no run.json.
   */
  private Stopped signalled(String signal, String example, Path runsDir, String... overrides) throws Exception {
    // signalled while the driver is held before step 4's generation, steps 1-3 done: the signal lands there
    PhaseHold hold = PhaseHold.arm(tmp.resolve("gates-" + signal), HELD_STEP, Phase.GENERATION);
    Running run = start(env(TestEnv.clean(), hold), example, runsDir, overrides);
    long headPid = -1;
    String headStart = "";
    try {
      hold.awaitHeld(run.process(), run.out(), 240);
      Matcher m = HEAD.matcher(Files.readString(run.out()));
      assertThat(m.find()).as("the driver's head line").isTrue();
      headPid = Long.parseLong(m.group(2));
      headStart = Procs.startTime(headPid).orElseThrow(() -> new AssertionError("the head's ray start is gone"));
      List<Long> pids = new ArrayList<>(Procs.group(headPid));
      pids.addAll(Procs.descendants(headPid));
      // each with its start time, so that a PID given to another process meanwhile does not count as the head's
      Map<Long, String> headProcesses = new HashMap<>();
      for (long pid : pids) {
        Procs.startTime(pid).ifPresent(start -> headProcesses.put(pid, start));
      }
      assertThat(headProcesses).as("the head's processes").hasSizeGreaterThan(3);

      signal(run, signal);
      hold.release(); // SIGTERM and SIGINT: the held step goes on and ends; nothing is left to release after SIGKILL
      // SIGTERM and SIGINT: the step in progress ends, spans are flushed and the head is stopped first
      long bound = signal.equals("KILL") ? KILL_BOUND_S : TERM_BOUND_S;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(bound);
      while (System.nanoTime() < deadline
          && (!remaining(headProcesses).isEmpty() || !headGroup(headPid, headStart).isEmpty())) {
        Thread.sleep(100);
      }
      // the invariant: nothing of the head remains, neither a process seen in it nor one in its group
      assertThat(remaining(headProcesses)).as("head processes %d s after SIG%s to the driver", bound, signal)
          .isEmpty();
      assertThat(headGroup(headPid, headStart)).as("the head's process group").isEmpty();
      assertThat(run.process.waitFor(TERM_BOUND_S, TimeUnit.SECONDS)).as("the driver ends").isTrue();
      List<Path> runDirs;
      try (var dirs = Files.list(runsDir)) {
        runDirs = dirs.toList();
      }
      assertThat(runDirs).hasSize(1);
      Path runJson = runDirs.get(0).resolve("run.json");
      if (signal.equals("KILL")) {
        assertThat(Files.exists(runJson)).as("a SIGKILLed driver can write nothing").isFalse();
        return new Stopped(example, overrides, runsDir, runDirs.get(0), 0);
      }
      com.fasterxml.jackson.databind.JsonNode summary = new com.fasterxml.jackson.databind.ObjectMapper()
          .readTree(runJson.toFile());
      assertThat(summary.get("status").asText()).isEqualTo("interrupted");
      int steps = summary.get("steps").asInt();
      assertThat(steps).as("the step in progress when signalled ended").isGreaterThanOrEqualTo((int) HELD_STEP);
      assertThat(Files.readAllLines(runDirs.get(0).resolve("steps.jsonl"))).hasSize(steps);
      // the completed steps' spans were flushed: every step in run.json has its root span in the driver's file
      dev.ravel.telemetry.traces.RunTraces traces = dev.ravel.telemetry.traces.RunTraces.readDir(runDirs.get(0));
      assertThat(traces.named("rl.grpo.step")).hasSizeGreaterThanOrEqualTo(steps);
      assertThat(Files.readString(run.out())).contains("interrupted (SIG" + signal + ") after " + steps + " steps; go on with:");
      assertThat(run.process.exitValue()).isEqualTo(signal.equals("TERM") ? 143 : 130);
      return new Stopped(example, overrides, runsDir, runDirs.get(0), steps);
    } finally {
      run.stop();
      stopLeftover(headPid, headStart);
    }
  }

  /**
   * The hint a stopped run printed is true: its stopped step was checkpointed (grpo.checkpoint_every is 0 here) and
   * {@code --resume} goes on from it for 2 more steps, a driver with a head of its own.
   */
  private void resumes(Stopped stopped) throws Exception {
    List<String> resume = new ArrayList<>(List.of("run", home().resolve(stopped.example()).toString(),
        "grpo.steps=" + (stopped.steps() + 2), "telemetry.runs_dir=" + stopped.runsDir(), "--resume",
        stopped.runDir().getFileName().toString()));
    resume.addAll(List.of(stopped.overrides()));
    RavelCommand.Result resumed = RavelCommand.run(TestEnv.clean(), 300, resume.toArray(String[]::new));
    assertThat(resumed.exitCode()).as(resumed.stdout() + resumed.stderr()).isZero();
    assertThat(resumed.stdout()).contains("Ray head started at 127.0.0.1:")
        .contains("resumed after step " + stopped.steps()).contains("succeeded: 2 steps");
    assertThat(Files.readAllLines(stopped.runDir().resolve("steps.jsonl"))).hasSize(stopped.steps() + 2);
  }

  /**
   * On the shared head ({@link SharedRayHead}): a head this driver did not start, as a user's cluster is (the build
   * started it and owns it). Other classes' drivers used it before this one: their jobs are told apart by the jobs
   * the head listed before this driver started.
   */
  @Test
  void driverKilled_aHeadItDidNotStartKeepsRunning() throws Exception {
    Map<String, String> env = SharedRayHead.env();
    String address = env.get("RAY_ADDRESS");
    long headPid = rayStart(address);
    String headStart = Procs.startTime(headPid).orElseThrow(() -> new AssertionError("the head's ray start is gone"));
    // the head's own processes (ray start, GCS, raylet, dashboard, agents), before this driver joins: its process
    // group, which holds no worker (Ray starts each worker in a process group of its own), so no process of the
    // drivers that used the shared head before
    List<Long> own = Procs.group(headPid);
    assertThat(own).hasSizeGreaterThan(3);
    JobsClient jobs = JobsClient.of(env.get(RayVersions.DASHBOARD_ENV));
    Set<String> earlier = jobs.list().stream().map(JobInfo::id).collect(Collectors.toSet());
    PhaseHold hold = PhaseHold.arm(tmp.resolve("gates-own-head"), HELD_STEP, Phase.GENERATION);
    Running run = start(env(env, hold), "examples/grpo-sync.yaml", tmp.resolve("runs"), SYNC);
    try {
      hold.awaitHeld(run.process(), run.out(), 240);
      assertThat(Files.readString(run.out())).contains("Ray at " + address);
      assertThat(driverJobs(jobs, earlier)).as("the driver's job, as the head lists it while the driver runs")
          .hasSize(1).allSatisfy(j -> assertThat(j.status()).isEqualTo(JobStatus.RUNNING));

      signal(run, "KILL");
      assertThat(run.process.waitFor(KILL_BOUND_S, TimeUnit.SECONDS)).isTrue();
      // Not an observation window: wait until the head itself has recorded the driver's job as ended (its GCS
      // saw the driver go), so that the head has been through the driver's death when it is checked below.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(KILL_BOUND_S);
      while (System.nanoTime() < deadline
          && !driverJobs(jobs, earlier).stream().allMatch(j -> j.status().isTerminal())) {
        Thread.sleep(200);
      }
      assertThat(driverJobs(jobs, earlier)).as("the driver's job %d s after its SIGKILL", KILL_BOUND_S)
          .hasSize(1).allSatisfy(j -> assertThat(j.status().isTerminal()).as(j.status().name()).isTrue());

      assertThat(Procs.startTime(headPid)).as("the head's ray start after the driver's SIGKILL").contains(headStart);
      assertThat(Procs.alive(own)).as("the head's own processes after the driver's SIGKILL")
          .containsExactlyInAnyOrderElementsOf(own);
    } finally {
      run.stop();
    }
  }

  /** The jobs of drivers that connected to the head by themselves since {@code earlier} was listed. */
  private static List<JobInfo> driverJobs(JobsClient jobs, Set<String> earlier) {
    return jobs.list().stream().filter(j -> j.type().equals(JobInfo.DRIVER) && !earlier.contains(j.id())).toList();
  }

  /**
   * The {@code ray start} of the head at {@code address}: the leader of the head's process group (its supervisor
   * starts it with setsid), whose command line names the head's GCS port.
   */
  private static long rayStart(String address) throws IOException {
    String port = "--port=" + address.substring(address.lastIndexOf(':') + 1);
    List<Long> found = new ArrayList<>();
    for (Procs.Proc p : Procs.all()) {
      if (p.pgid() == p.pid()) {
        String cmd = Procs.cmdline(p.pid()).orElse("");
        if (cmd.contains(" start --head ") && List.of(cmd.split(" ")).contains(port)) {
          found.add(p.pid());
        }
      }
    }
    assertThat(found).as("the ray start of the head at %s", address).hasSize(1);
    return found.get(0);
  }

  /** A started driver, with its start time (read while it runs), so that a signal can only reach it. */
  private record Running(Process process, Path out, String startTime) {
    void stop() throws InterruptedException {
      if (process.isAlive()) {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  /** {@code env} with {@code hold}'s variable: the driver holds where the test chose. */
  private static Map<String, String> env(Map<String, String> env, PhaseHold hold) {
    Map<String, String> out = new HashMap<>(env);
    out.putAll(hold.env());
    return out;
  }

  private Running start(Map<String, String> env, String example, Path runsDir, String... extra) throws IOException {
    Path out = Files.createTempFile(tmp, "driver", ".out");
    // SIGINT back to its default first: a test run in the background (CI, nohup) inherits it ignored, and a
    // process started with SIGINT ignored rightly ignores it (perl resets it and execs: the PID stays the driver's)
    List<String> cmd = new ArrayList<>(List.of("perl", "-e", "$SIG{INT} = 'DEFAULT'; exec @ARGV or die $!",
        home().resolve("bin/ravel").toString(), "run", home().resolve(example).toString(), "grpo.steps=20000",
        "telemetry.runs_dir=" + runsDir));
    cmd.addAll(List.of(extra));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    Process p = pb.start();
    // read now: the process is our child and cannot have been reaped before it ended
    return new Running(p, out, Procs.startTime(p.pid()).orElse(""));
  }

  private static Path home() {
    return Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
  }

  /**
   * Sends SIG{@code name} to the driver (bin/ravel execs the JVM, so its PID is the driver's), only while its
   * PID still names it: the process is alive and has the start time read when it was started.
   */
  private static void signal(Running run, String name) throws IOException, InterruptedException {
    long pid = run.process().pid();
    assertThat(run.process().isAlive()).as("the driver runs when it is signalled").isTrue();
    assertThat(Procs.startTime(pid)).as("the driver's PID still names it").contains(run.startTime());
    Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(pid)).inheritIO().start();
    assertThat(kill.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(kill.exitValue()).isZero();
  }

  /** Those of {@code processes} (PID to start time) that still run: the same PID with the same start time. */
  private static List<Long> remaining(Map<Long, String> processes) {
    return processes.entrySet().stream()
        .filter(e -> Procs.startTime(e.getKey()).map(e.getValue()::equals).orElse(false))
        .map(Map.Entry::getKey).toList();
  }

  /**
   * The live processes of the head's process group. Its number can only be reused once the group emptied (a
   * PID in use as a process group's id is not given out), so when the head's PID names another process now,
   * the head's group is gone.
   */
  private static List<Long> headGroup(long headPid, String headStart) throws IOException {
    java.util.Optional<String> leader = Procs.startTime(headPid);
    if (leader.isPresent() && !leader.get().equals(headStart)) {
      return List.of();
    }
    return Procs.group(headPid);
  }

  /**
   * After a failure: whatever of the head is left, by its process group, each by the identity read while it
   * is listed alive (PID and start time: its PID given to another since is not signalled).
   */
  private static void stopLeftover(long headPid, String headStart) throws IOException {
    if (headPid > 0) {
      for (long pid : headGroup(headPid, headStart)) {
        ProcessIdentity.of(pid).ifPresent(ProcessIdentity::kill);
      }
    }
  }
}
