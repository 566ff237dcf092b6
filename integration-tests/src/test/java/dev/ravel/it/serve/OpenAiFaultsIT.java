package dev.ravel.it.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.grpo.GrpoRun;
import dev.ravel.driver.grpo.StepListener;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GRPO against servers the user runs ({@code generation.servers}): a standalone {@code bin/ravel serve},
 * one Ray head for the class. The happy path (weights loaded into the server each step), and what a user
 * sees when a server is down at start, refuses a request, or is killed mid-run.
 */
final class OpenAiFaultsIT {
  private static final Pattern LISTENING = Pattern.compile("listening on (http://127\\.0\\.0\\.1:\\d+)");
  /**
   * What a user sees when the server is gone, at the connection level: refused on a new connection, or, on a
   * kept-alive one the HTTP client reused, reset, closed or ended without a response (EOF, no bytes), as the
   * JDK's client words them; which of them depends only on when the connection was opened.
   */
  private static final Pattern DEAD_SERVER = Pattern.compile("connection refused|connection reset|reset by peer"
      + "|received no bytes|\\bEOF|end of stream|broken pipe|connection (was )?closed|closed by (the )?peer"
      + "|ClosedChannelException|connection abort", Pattern.CASE_INSENSITIVE);
  /** How long a server may take to end once killed or orphaned (it ends in seconds). */
  private static final long SERVER_GONE_S = 120;

  /**
   * The share of engine requests (by group) the class's session samples: its workers read the engine sampler's
   * settings from the session's telemetry. Only the parent-based server of the sampling test traces by it.
   */
  private static final double ENGINE_SAMPLE_RATIO = 0.5;

  @TempDir
  static Path runs;
  static Process server;
  static String url;
  private static String lastUrl;
  static DriverSession session;

  @BeforeAll
  static void start() throws Exception {
    server = serve();
    url = lastUrl;
    session = DriverSession.builder(config("it-faults-session", url, "telemetry.engine_tracing=true",
        "telemetry.engine_sample_ratio=" + ENGINE_SAMPLE_RATIO).telemetry()).env(SharedRayHead.env())
        .workerJvmOptions(List.of("-Xmx256m", "-XX:+UseSerialGC")).start();
  }

  /** A standalone {@code bin/ravel serve} on a free port; {@link #lastUrl} is set to its URL. */
  private static Process serve() throws Exception {
    return serve("it-faults-server");
  }

  /** As above, its telemetry run id {@code runId}, with {@code more} arguments. */
  private static Process serve(String runId, String... more) throws Exception {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    Path out = Files.createTempFile(runs, "serve", ".out");
    List<String> cmd = new ArrayList<>(List.of(home.resolve("bin/ravel").toString(), "serve", "--port", "0",
        "--telemetry", "runs_dir=" + runs, "--telemetry", "run_id=" + runId));
    cmd.addAll(List.of(more));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
    pb.environment().clear();
    pb.environment().putAll(TestEnv.clean());
    Process p = pb.start();
    Matcher m = RavelCommand.awaitOutput(out, p, LISTENING, "", 120);
    lastUrl = m.group(1);
    return p;
  }

  @AfterAll
  static void stop() throws Exception {
    if (session != null) {
      session.close();
    }
    if (server != null && server.isAlive()) {
      server.destroy();
      if (!server.waitFor(20, TimeUnit.SECONDS)) {
        server.destroyForcibly();
      }
    }
  }

  private static RunConfig config(String runId, String serverUrl, String... overrides) {
    List<String> o = new ArrayList<>(List.of("telemetry.run_id=" + runId, "telemetry.runs_dir=" + runs,
        "grpo.prompts_per_step=4", "grpo.group_size=4", "generation.workers=2", "generation.backend=openai",
        "generation.servers=" + serverUrl));
    o.addAll(List.of(overrides));
    return RunConfig.load(null, o, TestEnv.clean());
  }

  private static String messages(Throwable t) {
    StringBuilder b = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      b.append(c.getMessage()).append('\n');
    }
    return b.toString();
  }

  @Test
  void run_againstAGivenServer_trainsAndTheServerServesTheLastVersion() throws Exception {
    List<StepRecord> steps = new GrpoRun(session, config("it-faults-ok", url, "grpo.steps=4",
        "generation.weight_sync=lora"), StepListener.NONE).run();

    // steps 1..3 load versions 1..3 as adapters (step 0 generates with the initial weights)
    assertThat(steps).hasSize(4).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(16));
    String models = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url + "/v1/models")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    // the last version loaded and the one before it stay; older adapters were unloaded. Their names carry the run
    // id and the attempt: another run on this server never requests them
    assertThat(models).containsPattern("\"ravel-tiny-it-faults-ok-[0-9a-z]+-v3\"")
        .containsPattern("\"ravel-tiny-it-faults-ok-[0-9a-z]+-v2\"")
        .doesNotContainPattern("\"ravel-tiny-it-faults-ok-[0-9a-z]+-v1\"").doesNotContain("\"ravel-tiny-v3\"");
  }

  @Test
  void run_engineSampleRatio_aParentBasedServerTracesExactlyTheGroupsTheClientSampled() throws Exception {
    Process parentBased = serve("it-faults-parent-server", "--trace-sampler", "parentbased", "--telemetry",
        "engine_tracing=true", "--telemetry", "exporter=file");
    String parentUrl = lastUrl;
    double ratio = ENGINE_SAMPLE_RATIO; // the session's (its workers sample by it)
    try {
      assertThat(new GrpoRun(session, config("it-faults-sampled", parentUrl, "grpo.steps=3", "generation.refit=false"),
          StepListener.NONE).run()).hasSize(3);
    } finally {
      parentBased.destroy(); // SIGTERM: the server flushes its spans as it stops
      assertThat(parentBased.waitFor(SERVER_GONE_S, TimeUnit.SECONDS)).isTrue();
    }

    // the client decides per group (one request with n = 4) by the engine sampler's hash of its id, and vLLM's
    // rule (the traceparent's sampled flag) decides on the server: exactly the sampled groups' choices are traced
    java.util.Set<String> expected = new java.util.TreeSet<>();
    for (int step = 0; step < 3; step++) {
      for (int p = 0; p < 4; p++) {
        String group = "s" + step + "-p" + p;
        if (dev.ravel.workers.engine.RequestSampler.inRatio(group, ratio)) {
          for (int i = 0; i < 4; i++) {
            expected.add(group + "-" + i);
          }
        }
      }
    }
    assertThat(expected).isNotEmpty().hasSizeLessThan(48);
    java.util.Set<String> traced = new java.util.TreeSet<>();
    dev.ravel.telemetry.traces.RunTraces.readDir(runs.resolve("it-faults-parent-server")).named("llm_request")
        .forEach(s -> traced.add(String.valueOf(s.attributes().get("gen_ai.request.id"))));
    assertThat(traced).isEqualTo(expected);
  }

  /** The server's {@code /metrics} samples, by name with labels. */
  private static Map<String, Double> metrics(String server) throws Exception {
    String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(server + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    Map<String, Double> out = new java.util.HashMap<>();
    for (String line : body.split("\n")) {
      if (!line.isBlank() && !line.startsWith("#")) {
        int space = line.lastIndexOf(' ');
        out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
      }
    }
    return out;
  }

  @Test
  void run_serverRefusesTheRequest_stepFailsWithTheServersOwnMessage() {
    RunConfig c = config("it-faults-404", url, "grpo.steps=2", "generation.model=no-such-model", "generation.refit=false");

    assertThatThrownBy(() -> new GrpoRun(session, c, StepListener.NONE).run())
        .satisfies(e -> assertThat(messages(e)).contains(url + "/v1/completions").contains("HTTP 404")
            .contains("no-such-model"));
  }

  @Test
  void run_serverDownAtStart_oneLineNamingTheUrlBeforeRayStarts() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      port = s.getLocalPort();
    }
    String down = "http://127.0.0.1:" + port;

    Path example = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize()
        .resolve("examples/grpo-sync.yaml");
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 120, "run", example.toString(),
        "generation.backend=openai", "generation.servers=" + down, "grpo.steps=1", "telemetry.runs_dir=" + runs);

    assertThat(r.exitCode()).isEqualTo(2);
    // (Ray's jar and Ravel's both bind SLF4J, which SLF4J reports on stderr before anything runs)
    assertThat(r.stderr().lines().filter(l -> !l.startsWith("SLF4J: "))).hasSize(1).first().asString()
        .isEqualTo("ravel: invalid configuration: generation.servers: " + down
            + "/health is not reachable (connection refused)");
    assertThat(r.stdout()).doesNotContain("ravel: run ");
  }

  /**
   * A sync run against a server of its own, killed after step 2: until then the server received each group as
   * one request with n choices and served the run's own weights (the native refit); then the step fails naming
   * the dead server.
   */
  @Test
  void run_serverKilledMidRun_sendsEachGroupAsOneRequestWithNChoicesThenFailsNamingTheServer() throws Exception {
    Process victim = serve();
    String victimUrl = lastUrl;
    try {
      RunConfig c = config("it-faults-killed", victimUrl, "grpo.steps=6");
      Map<String, Double> metricsAfterStep2 = new java.util.concurrent.ConcurrentHashMap<>();
      java.util.concurrent.atomic.AtomicReference<String> weightsAfterStep2 = new java.util.concurrent.atomic.AtomicReference<>();
      StepListener killAfterStep2 = (metrics, total) -> {
        if (metrics.step() == 2) { // steps are numbered from 1: after the second
          try { // what the server says it received and serves, read before it is killed (asserted below)
            metricsAfterStep2.putAll(metrics(victimUrl));
            weightsAfterStep2.set(HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create(victimUrl + "/weight_info")).build(), HttpResponse.BodyHandlers.ofString()).body());
          } catch (Exception e) {
            weightsAfterStep2.set("not read: " + e);
          }
          victim.destroyForcibly();
          try {
            // dead before the next step starts, whatever the load: that step must find no server
            assertThat(victim.waitFor(SERVER_GONE_S, TimeUnit.SECONDS)).as("the killed server ended").isTrue();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      };
      GrpoRun run = new GrpoRun(session, c, killAfterStep2);

      // the step fails naming the dead server's URL and a connection-level failure (not, say, a bad answer)
      assertThatThrownBy(run::run).satisfies(e -> assertThat(messages(e)).contains(victimUrl)
          .containsPattern(DEAD_SERVER));
      assertThat(run.history()).hasSize(2).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(16));
      // 2 steps x 4 groups, dealt whole to the 2 workers: the server received 8 requests, each with n = 4
      assertThat(metricsAfterStep2.get("vllm:request_params_n_count{model_name=\"ravel-tiny\"}")).isEqualTo(8.0);
      assertThat(metricsAfterStep2.get("vllm:request_params_n_sum{model_name=\"ravel-tiny\"}")).isEqualTo(32.0);
      // the native refit: the server serves the last version the run loaded (step 2 loads version 1), under
      // vLLM's label
      assertThat(weightsAfterStep2.get()).isEqualTo("{\"weight_version\":\"1\"}");
    } finally {
      victim.destroyForcibly();
    }
  }

  @Test
  void launchedServer_itsWorkerKilled_exitsToo() throws Exception {
    RunConfig c = RunConfig.load(null, List.of("telemetry.run_id=it-faults-orphan", "telemetry.runs_dir=" + runs,
        "grpo.steps=5", "grpo.prompts_per_step=4", "grpo.group_size=4", "generation.workers=1",
        "generation.backend=openai", "generation.launch=ravel"), TestEnv.clean());
    Path runDir = session.config().runDir(); // the session's workers write to the session's run folder
    // handles taken while each process is seen alive: a handle names that process only (its start time), so
    // a PID given to another process later is neither signalled nor taken for a server still running
    List<ProcessHandle> servers = new ArrayList<>();
    List<ProcessHandle> workers = new ArrayList<>();
    StepListener killTheWorker = (metrics, total) -> {
      if (metrics.step() != 2) {
        return;
      }
      try (var files = Files.list(runDir)) {
        for (Path f : files.toList()) {
          String n = f.getFileName().toString();
          if (n.startsWith("inference-server-") && n.endsWith(".log")) {
            long pid = Long.parseLong(n.substring("inference-server-".length(), n.length() - 4));
            java.util.Optional<ProcessHandle> server = ProcessHandle.of(pid);
            if (server.isEmpty()) {
              continue;
            }
            ProcessHandle worker = server.get().parent().orElseThrow();
            servers.add(server.get());
            workers.add(worker);
            worker.destroyForcibly(); // SIGKILL: the worker gets no chance to stop its server
          }
        }
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    };

    // Ray restarts the worker (cluster.max_restarts), which launches a server of its own: the run completes
    GrpoRun run = new GrpoRun(session, c, killTheWorker);
    assertThat(run.run()).hasSize(5);
    assertThat(run.faults().restarts()).isEqualTo(1);

    assertThat(servers).hasSize(1);
    // the orphaned server ends by itself (it watches its parent): waited for, generously
    for (ProcessHandle server : servers) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(SERVER_GONE_S);
      while (server.isAlive() && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      assertThat(server.isAlive()).as("server " + server.pid() + " after its worker's SIGKILL").isFalse();
    }
    assertThat(workers).allSatisfy(w -> assertThat(w.isAlive()).as("worker " + w.pid()).isFalse());
  }
}
