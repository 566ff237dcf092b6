package dev.ravel.driver.cli;

import dev.ravel.driver.config.Keys;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.grpo.GrpoRun;
import dev.ravel.driver.grpo.PreparedData;
import dev.ravel.driver.grpo.Resume;
import dev.ravel.driver.grpo.RunInterruptedException;
import dev.ravel.driver.grpo.RunSummary;
import dev.ravel.driver.grpo.RunVersions;
import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.driver.jobs.JobContext;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.driver.trackers.Trackers;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.workers.fault.FaultStats;
import dev.ravel.workers.generation.openai.OpenAiBackend;
import dev.ravel.workers.generation.openai.ServerBackendSpec;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** {@code ravel run <config.yaml> [section.key=value ...]}: a GRPO run on Ray. */
@Command(name = "run", mixinStandardHelpOptions = true,
    description = "Run GRPO (sync or async) on Ray: on RAY_ADDRESS (or cluster.address) if set, else on a local"
        + " head on 127.0.0.1. Any config value can be overridden as section.key=value.")
final class RunCommand implements Callable<Integer> {
  @Mixin
  RunArgs args = new RunArgs();

  @Option(names = "--resume", paramLabel = "RUN_ID",
      description = "Go on with run RUN_ID from its newest checkpoint, in its run folder and under its id; the"
          + " config must be the run's (grpo.steps, cluster.* and telemetry.* may change).")
  String resume;

  @ParentCommand
  RavelCli cli;

  /** The environment this run reads: the command line's (this process's outside tests). */
  private Map<String, String> env() {
    return cli == null ? System.getenv() : cli.env();
  }

  @Override
  public Integer call() {
    Map<String, String> env = env();
    List<String> overrides = new java.util.ArrayList<>(args.overrides);
    if (resume != null) {
      overrides.add("telemetry.run_id=" + resume);
    }
    RunConfig config = RunConfig.load(args.configFile, overrides, env);
    Resume from = resume == null ? null : Resume.load(config.telemetry().runDir(), resume, config.resolved(),
        config.get(Keys.STEPS));
    // before a head is started or contacted: each fails with one line naming the key
    Preflight.writableRunsDir(config.telemetry().runsDir(), env);
    Preflight.otlpSettings(config.telemetry(), env);
    Preflight.reachableRay(config.get(Keys.ADDRESS), env);
    dev.ravel.driver.grpo.PhaseGates.fromEnvironment(env); // a test's gate folder that is not there: one line, now
    // MLFLOW_TRACKING_URI and credentials (mlflow), TensorBoard in the Ray virtualenv (tensorboard)
    Trackers.check(config.telemetry(), env, RayHome.locate(env).venv().resolve("bin").resolve("python"));
    DriverSession.Builder b = DriverSession.builder(config.telemetry()).env(env)
        .workerJvmOptions(List.of("-Xmx" + config.get(Keys.WORKER_HEAP_MB) + "m", "-XX:+UseSerialGC"));
    if (!config.get(Keys.ADDRESS).isEmpty()) {
      b.address(config.get(Keys.ADDRESS));
    }
    if (config.get(Keys.NUM_CPUS) > 0) {
      b.numCpus(config.get(Keys.NUM_CPUS));
    }
    b.codeSearchPath(config.get(Keys.CODE_SEARCH_PATH).stream().map(java.nio.file.Path::of).toList());
    ServerBackendSpec servers = config.serverBackend();
    if (servers != null && !servers.launches()) {
      checkServers(servers); // a server that is down: one line naming it, before Ray starts
    }
    // the run folder is this driver's alone from here on: another run's records or a live driver stop it here
    try (RunLock lock = RunLock.claim(config.telemetry().runDir(), config.telemetry().runId(), from != null)) {
      return claimed(env, config, from, b);
    }
  }

  /** The run itself, its folder claimed. */
  private int claimed(Map<String, String> env, RunConfig config, Resume from, DriverSession.Builder b) {
    PreparedData data = null;
    if (!config.get(Keys.TRAIN).isEmpty()) { // your model, data and reward, checked and prepared before Ray starts
      dev.ravel.driver.cluster.RayHome home = dev.ravel.driver.cluster.RayHome.locate(env);
      data = PreparedData.prepare(config, config.telemetry().runDir(), home.venv().resolve("bin").resolve("python"),
          home.ravelHome());
      System.out.println("ravel: " + data.prompts().rows().size() + " prompts from " + String.join(", ",
          config.get(Keys.TRAIN)) + (data.dropped() + data.truncated() == 0 ? "" : " (" + data.dropped()
          + " dropped, " + data.truncated() + " truncated: longer than " + Keys.MAX_PROMPT_TOKENS + ")")
          + "; reward " + data.rewardFunction());
    }
    Instant started = Instant.now();
    String runId = config.telemetry().runId();
    System.out.println("ravel: run " + runId + " (" + config.mode().configName() + ", "
        + config.get(Keys.STEPS) + " steps)" + (from == null ? "" : ", resumed after step "
        + from.completedSteps() + " from " + from.checkpoint().dir()));
    List<StepRecord> steps = List.of();
    RunRecord.Status status = RunRecord.Status.FAILED;
    Map<String, Object> extra = new LinkedHashMap<>();
    FaultStats faults = FaultStats.NONE;
    dev.ravel.telemetry.sdk.ExportStats spans = null;
    int unreported = 0;
    String trackerSummary = null;
    // SIGINT/SIGTERM: the run stops after the step in progress, then flushes its spans, stops its head and
    // writes run.json (status interrupted); a second signal ends the process at once. Installed once Ray is
    // up (Ray's native runtime handles these signals itself otherwise, exiting at once); before that, the
    // JVM's default applies and the head's supervisor stops the head.
    java.util.concurrent.atomic.AtomicReference<String> signalled = new java.util.concurrent.atomic.AtomicReference<>();
    RayHome home = RayHome.locate(env);
    // the step metrics also go to the trackers (telemetry.trackers), each on a thread of its own: never in a step's
    // way; opened once Ray is up, so that a run that cannot start leaves no tracker run behind (closed first)
    try (DriverSession session = b.start();
        Trackers trackers = Trackers.open(config.telemetry(), env, config.resolved(),
            config.telemetry().trackers().isEmpty() ? "" : RunVersions.of(home.ravelHome()).get("git_commit"),
            home.venv().resolve("bin").resolve("python"), home.ravelHome(),
            line -> System.err.println("ravel: " + line))) {
      Progress progress = new Progress(System.out, Terminal.redraw(), Terminal.columns());
      GrpoRun run = new GrpoRun(session, config, (m, total) -> {
        trackers.step(m);
        progress.onStep(m, total);
      }, from, data).phaseHook(dev.ravel.driver.grpo.PhaseGates.fromEnvironment(env));
      Signals.onInterrupt(name -> {
        signalled.set(name);
        run.requestStop();
      });
      try {
        steps = JobContext.runInJobSpan(session.spans(), env, run::run); // rl.job.run when submitted
        status = RunRecord.Status.SUCCEEDED;
        extra.put("engines", run.engineStats().stream().map(e -> Map.of(
            "requests_finished", e.requestsFinishedTotal(), "preemptions", e.preemptions(),
            "prompt_tokens", e.promptTokens(), "generation_tokens", e.generationTokens(),
            "spans_kept", e.spansKept(), "spans_sampled_out", e.spansSampledOut())).toList());
        if (run.collectorStats() != null) {
          extra.put("collector", run.collectorStats());
          extra.put("buffer", run.bufferStats());
        }
      } catch (RunInterruptedException e) {
        status = RunRecord.Status.INTERRUPTED;
      } finally {
        if (steps.isEmpty()) {
          steps = run.history();
        }
        faults = run.faults();
        Map<String, Object> faultsJson = new LinkedHashMap<>(faults.json());
        faultsJson.put("dead_nodes", run.deadNodes());
        extra.put("faults", faultsJson);
        extra.put("final_weights_sha256", run.finalWeightsSha256());
        if (from != null) {
          extra.put("resumed_after_step", from.completedSteps());
        }
        if (data != null) {
          Map<String, Object> d = new LinkedHashMap<>();
          d.put("prompts", data.prompts().rows().size());
          d.put("dropped_too_long", data.dropped());
          d.put("truncated_too_long", data.truncated());
          d.put("epochs_started", data.prompts().epochsBegun(config.get(Keys.PROMPTS_PER_STEP),
              steps.isEmpty() ? 0 : steps.get(steps.size() - 1).step()));
          d.put("reward_function", data.rewardFunction());
          extra.put("data", d);
        }
        session.close();
        spans = session.spanTotals();
        unreported = session.unreportedActors().size();
        Map<String, Object> tel = new LinkedHashMap<>();
        tel.put("exporter", config.telemetry().exporter().configName());
        tel.put("preset", config.telemetry().preset().configName());
        // every process's spans: for each exporter, ended = exported + failed + dropped (what was not sent by
        // the shutdown deadline counted as dropped); an actor that did not report is named, its spans uncounted
        tel.put("spans", spans.json());
        tel.put("unreported_actors", session.unreportedActors());
        Map<String, Object> processes = new LinkedHashMap<>();
        processes.put("driver", session.telemetry().stats().json());
        session.actorStats().forEach((k, v) -> processes.put(k, v.json()));
        tel.put("processes", processes);
        trackers.close(status.jsonName()); // within Trackers.CLOSE_TIMEOUT
        if (trackers.any()) {
          tel.put("trackers", trackers.json());
          trackerSummary = trackers.summary();
        }
        extra.put("telemetry", tel);
        extra.put(RunRecord.VERSIONS, RunVersions.of(RayHome.locate(env).ravelHome()));
        new RunRecord(runId, config.mode().configName(), status, started, Instant.now(), steps.size(),
            config.resolved(), steps, extra).write(config.telemetry().runDir());
      }
    }
    if (status == RunRecord.Status.INTERRUPTED) {
      int done = (from == null ? 0 : from.completedSteps()) + steps.size();
      java.util.Optional<dev.ravel.driver.grpo.Checkpoints.Found> ckpt =
          dev.ravel.driver.grpo.Checkpoints.latest(config.telemetry().runDir());
      if (ckpt.isPresent() && ckpt.get().meta().step() == done && ckpt.get().meta().weightsSha256() != null) {
        System.out.printf("%nrun %s interrupted (SIG%s) after %d steps; go on with: ravel run %s --resume %s%n",
            runId, signalled.get(), done, args.configFile, runId);
      } else { // say why the hint would not be true rather than print it
        System.out.printf("%nrun %s interrupted (SIG%s) after %d steps; it cannot be resumed: %s%n", runId,
            signalled.get(), done, ckpt.isEmpty() ? "no step completed a checkpoint"
                : ckpt.get().meta().weightsSha256() == null ? "its checkpoint holds no trainer state"
                : "its newest checkpoint is of step " + ckpt.get().meta().step());
      }
      return Signals.exitCode(signalled.get());
    }
    double seconds = steps.stream().mapToDouble(StepRecord::stepSeconds).sum();
    System.out.printf("run %s %s: %d steps in %.1fs, %s%n", runId, status.jsonName(), steps.size(), seconds,
        RunSummary.rewardTrend(steps, 3));
    if (faults.failedCalls() > 0) {
      System.out.printf("faults: %d restart(s), %d call(s) failed, %d issued again (%d generation requests)%n",
          faults.restarts(), faults.failedCalls(), faults.retriedCalls(), faults.retriedRequests());
    }
    if (spans != null && config.telemetry().enabled()) {
      System.out.println("spans: " + spans.summary() + (unreported == 0 ? ""
          : " (" + unreported + " actor(s) did not report: their spans are not counted)"));
    }
    if (trackerSummary != null) {
      System.out.println(trackerSummary);
    }
    System.out.println("traces: " + config.telemetry().runDir() + "   (ravel trace " + runId + ", ravel report "
        + runId + ")");
    String ray = DriverLog.path();
    if (ray != null && java.nio.file.Files.isRegularFile(java.nio.file.Path.of(ray))) {
      System.out.println("Ray's messages: " + ray);
    }
    return 0;
  }

  private static void checkServers(ServerBackendSpec servers) {
    try {
      OpenAiBackend.checkServers(servers);
    } catch (ConfigException e) {
      throw e.under(Keys.SERVERS.section() + ".");
    }
  }
}
