package dev.ravel.it.trackers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.ravel.it.support.Procs;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code telemetry.trackers: [mlflow, tensorboard]} on real parts: a real {@code mlflow server} (PyPI's, from the
 * virtualenv of {@code scripts/setup-mlflow.sh}, given as system property {@code ravel.mlflow.venv}) on 127.0.0.1
 * with a SQLite store, and {@code bin/ravel run} as a user runs it. Every step's numbers read back through
 * MLflow's REST API, and through TensorBoard's own {@code EventAccumulator}, are those of {@code steps.jsonl}; a
 * tracking server that is not there fails no step, and its failure is counted and printed once. One run on the
 * server serves the tests that read it as it ended; the last test resumes it.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
final class TrackersIT {
  private static final ObjectMapper JSON = JsonMapper.builder()
      .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();
  private static final int STEPS = 4;
  private static final String RUN_ID = "it-trackers";
  private static final String EXPERIMENT = "ravel-it-trackers";
  private static final String SECRET = "it-trackers-s3cr3t-token";
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @TempDir
  static Path dir;
  static Path venv;
  static Process server;
  static String serverStart;
  static List<long[]> serverChildren = new ArrayList<>();
  static String base;
  static RavelCommand.Result run;

  @BeforeAll
  static void aServerAndARun() throws Exception {
    venv = venv();
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    base = "http://127.0.0.1:" + port;
    Files.createDirectories(dir.resolve("mlflow-artifacts"));
    ProcessBuilder pb = new ProcessBuilder(venv.resolve("bin/mlflow").toString(), "server", "--host", "127.0.0.1",
        "--port", String.valueOf(port), "--workers", "1",
        "--backend-store-uri", "sqlite:///" + dir.resolve("mlflow.db"),
        "--default-artifact-root", dir.resolve("mlflow-artifacts").toString())
        .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(dir.resolve("mlflow-server.log").toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("MLFLOW_") || k.startsWith("OTEL_"));
    // the tracking server alone: MLflow's job runner (a pool of Huey consumers, each a Python process importing
    // MLflow) runs server-side jobs that tracking never asks for
    pb.environment().put("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false");
    server = pb.start();
    serverStart = Procs.startTime(server.pid()).orElse("");
    awaitHealthy(180);

    Map<String, String> env = new HashMap<>(SharedRayHead.env());
    env.put("MLFLOW_TRACKING_URI", base);
    env.put("MLFLOW_EXPERIMENT_NAME", EXPERIMENT);
    // (one generation worker: what the trackers get does not depend on how many there are)
    run = RavelCommand.run(env, 600, "run", example(), "grpo.steps=" + STEPS, "run.mode=async",
        "generation.workers=1", "telemetry.runs_dir=" + dir.resolve("runs"), "telemetry.run_id=" + RUN_ID,
        "telemetry.trackers=[mlflow,tensorboard]");
  }

  @AfterAll
  static void stopTheServer() throws Exception {
    if (server == null) {
      return;
    }
    // its workers (uvicorn's) with their start times, to signal only those same processes once it has gone
    for (long pid : Procs.descendants(server.pid())) {
      Procs.startTime(pid).ifPresent(t -> serverChildren.add(new long[] {pid, Long.parseLong(t)}));
    }
    Optional<ProcessHandle> h = Procs.same(server.pid(), serverStart);
    h.ifPresent(ProcessHandle::destroy);
    if (!server.waitFor(60, TimeUnit.SECONDS)) {
      Procs.same(server.pid(), serverStart).ifPresent(ProcessHandle::destroyForcibly);
      server.waitFor(20, TimeUnit.SECONDS);
    }
    for (long[] child : serverChildren) {
      Procs.same(child[0], Long.toString(child[1])).ifPresent(c -> {
        c.destroy();
        try {
          c.onExit().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
          Procs.same(child[0], Long.toString(child[1])).ifPresent(ProcessHandle::destroyForcibly);
        }
      });
    }
  }

  /** The virtualenv named by {@code ravel.mlflow.venv}; fails (never skips) without it. */
  static Path venv() {
    String v = System.getProperty("ravel.mlflow.venv", "");
    if (v.isBlank() || v.startsWith("${")) {
      fail("system property ravel.mlflow.venv is not set: run the integration tests with scripts/test-all.sh"
          + " (it installs MLflow and TensorBoard with scripts/setup-mlflow.sh and passes"
          + " -Dravel.mlflow.venv=<its virtualenv>)");
    }
    Path p = Path.of(v);
    if (!Files.isExecutable(p.resolve("bin/mlflow")) || !Files.isExecutable(p.resolve("bin/python"))) {
      fail("ravel.mlflow.venv=" + v + " has no bin/mlflow: run scripts/setup-mlflow.sh and pass the path it prints");
    }
    return p;
  }

  static String example() {
    return Path.of(System.getProperty("ravel.home", ".")).resolve("examples/grpo-sync.yaml").toAbsolutePath()
        .normalize().toString();
  }

  static void awaitHealthy(long seconds) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (System.nanoTime() < deadline) {
      if (!server.isAlive()) {
        fail("mlflow server ended (" + server.exitValue() + "):\n" + Files.readString(dir.resolve("mlflow-server.log")));
      }
      try {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + "/health"))
            .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not listening yet
      }
      Thread.sleep(500);
    }
    fail("mlflow server not healthy within " + seconds + " s:\n" + Files.readString(dir.resolve("mlflow-server.log")));
  }

  static JsonNode get(String path) throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + "/api/2.0/mlflow/" + path))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as("GET %s: %s", path, r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  static JsonNode post(String path, String body) throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + "/api/2.0/mlflow/" + path))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as("POST %s: %s", path, r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** The run's steps.jsonl, a JSON object a line. */
  static List<JsonNode> stepLines() throws IOException {
    return stepLines(RUN_ID);
  }

  static List<JsonNode> stepLines(String runId) throws IOException {
    List<JsonNode> out = new ArrayList<>();
    for (String line : Files.readAllLines(dir.resolve("runs").resolve(runId).resolve("steps.jsonl"))) {
      out.add(JSON.readTree(line));
    }
    return out;
  }

  /** The MLflow run of the Ravel run, found by its tag as a user would find it. */
  static JsonNode mlflowRun() throws Exception {
    return mlflowRun(RUN_ID);
  }

  static JsonNode mlflowRun(String ravelRunId) throws Exception {
    String experimentId = get("experiments/get-by-name?experiment_name=" + enc(EXPERIMENT))
        .path("experiment").path("experiment_id").asText();
    JsonNode runs = post("runs/search", JSON.createObjectNode().<com.fasterxml.jackson.databind.node.ObjectNode>set(
        "experiment_ids", JSON.createArrayNode().add(experimentId))
        .put("filter", "tags.`ravel.run_id` = '" + ravelRunId + "'").toString()).path("runs");
    assertThat(runs).as("MLflow runs tagged ravel.run_id=%s", ravelRunId).hasSize(1);
    return runs.get(0);
  }

  /** Each metric's values by step, as MLflow's REST API gives them back. */
  static Map<String, Map<Integer, Double>> mlflowMetrics(JsonNode run) throws Exception {
    String runId = run.path("info").path("run_id").asText();
    Map<String, Map<Integer, Double>> out = new TreeMap<>();
    for (JsonNode m : run.path("data").path("metrics")) {
      String key = m.path("key").asText();
      JsonNode history = get("metrics/get-history?run_id=" + enc(runId) + "&metric_key=" + enc(key)
          + "&max_results=1000").path("metrics");
      Map<Integer, Double> byStep = new TreeMap<>();
      for (JsonNode p : history) {
        assertThat(byStep.put(p.path("step").asInt(), p.path("value").asDouble()))
            .as("%s has one value at step %s", key, p.path("step").asInt()).isNull();
      }
      out.put(key, byStep);
    }
    return out;
  }

  /** Each tag's values by step, as TensorBoard's own EventAccumulator reads the event files. */
  static Map<String, Map<Integer, Double>> tensorBoardScalars() throws Exception {
    return tensorBoardScalars(RUN_ID);
  }

  static Map<String, Map<Integer, Double>> tensorBoardScalars(String runId) throws Exception {
    Path script = Path.of(System.getProperty("ravel.home", ".")).resolve("integration-tests/src/test/python/read_tensorboard.py");
    Path out = dir.resolve("tensorboard-read-" + runId + ".json");
    ProcessBuilder pb = new ProcessBuilder(venv.resolve("bin/python").toString(), script.toString(),
        dir.resolve("runs").resolve(runId).resolve("tensorboard").toString())
        .redirectOutput(out.toFile()).redirectError(dir.resolve("tensorboard-read.err").toFile());
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    Process p = pb.start();
    assertThat(p.waitFor(180, TimeUnit.SECONDS)).as("the TensorBoard reader ended").isTrue();
    assertThat(p.exitValue()).as(Files.readString(dir.resolve("tensorboard-read.err"))).isZero();
    Map<String, Map<Integer, Double>> read = new TreeMap<>();
    JSON.readTree(out.toFile()).fields().forEachRemaining(e -> {
      Map<Integer, Double> byStep = new TreeMap<>();
      e.getValue().forEach(pair -> byStep.put(pair.get(0).asInt(), pair.get(1).asDouble()));
      read.put(e.getKey(), byStep);
    });
    return read;
  }

  /**
   * The numbers of {@code steps.jsonl}'s lines that the trackers get, by tracker name, read straight from each
   * line's JSON (not through Ravel's classes).
   */
  static Map<String, Map<Integer, Double>> fromStepsJsonl() throws IOException {
    return fromStepsJsonl(RUN_ID);
  }

  static Map<String, Map<Integer, Double>> fromStepsJsonl(String runId) throws IOException {
    Map<String, String> paths = new LinkedHashMap<>();
    paths.put("rl.step.reward.mean", "/rewardMean");
    paths.put("rl.step.reward.std", "/rewardStd");
    paths.put("rl.step.kl", "/kl");
    paths.put("rl.step.loss", "/loss");
    paths.put("rl.step.clip_fraction", "/clipFraction");
    paths.put("rl.step.tokens", "/tokens");
    paths.put("rl.step.tokens_per_second", "/tokensPerSecond");
    paths.put("rl.step.duration", "/stepSeconds");
    paths.put("rl.step.weight_version", "/weightVersion");
    paths.put("rl.step.trajectories.used", "/trajectories");
    paths.put("rl.step.trajectories.dropped", "/droppedForAge");
    paths.put("rl.step.ray_calls", "/rayCalls");
    paths.put("rl.completion.length.mean", "/completions/meanTokens");
    paths.put("rl.completion.length.max", "/completions/maxTokens");
    paths.put("rl.completion.clipped", "/completions/clipped");
    paths.put("rl.step.grad_norm", "/update/gradNorm");
    paths.put("rl.step.learning_rate", "/update/learningRate");
    paths.put("rl.step.entropy", "/update/entropy");
    paths.put("rl.step.clip_fraction.side.low", "/update/clipLow");
    paths.put("rl.step.clip_fraction.side.high", "/update/clipHigh");
    paths.put("rl.step.clip_fraction.side.dual", "/update/clipDual");
    paths.put("rl.step.ratio.mean", "/update/ratioMean");
    paths.put("rl.step.ratio.max", "/update/ratioMax");
    paths.put("rl.step.tis_truncated", "/update/tisTruncated");
    paths.put("rl.groups.zero_advantage", "/update/zeroAdvantageGroups");
    paths.put("rl.step.kept_sequences", "/update/keptSequences");
    paths.put("rl.step.epochs", "/update/epochs");
    paths.put("rl.step.reward.failed", "/rewards/failed");
    paths.put("rl.step.policy_lag.mean", "/lag/meanAge");
    paths.put("rl.step.policy_lag.max", "/lag/maxAge");
    paths.put("rl.buffer.depth", "/lag/bufferDepth");
    paths.put("rl.collector.in_flight", "/lag/inFlight");
    Map<String, Map<Integer, Double>> out = new TreeMap<>();
    for (JsonNode line : stepLines(runId)) {
      int step = line.path("step").asInt();
      paths.forEach((name, pointer) -> {
        JsonNode v = line.at(pointer);
        assertThat(v.isNumber()).as("steps.jsonl step %s has %s", step, pointer).isTrue();
        out.computeIfAbsent(name, k -> new TreeMap<>()).put(step, v.asDouble());
      });
      out.computeIfAbsent("rl.completion.clipped_share", k -> new TreeMap<>()).put(step,
          line.at("/completions/clipped").asDouble() / line.at("/trajectories").asDouble());
      // the engines over the step: a value an engine did not measure (no request scheduled in it) is absent
      Map.of("rl.step.engine.requests", "/engine/requests", "rl.step.engine.queue_time.mean", "/engine/queueTimeMean",
          "rl.step.engine.preemptions", "/engine/preemptions", "rl.step.engine.running.mean", "/engine/runningMean",
          "rl.step.engine.waiting.mean", "/engine/waitingMean", "rl.step.engine.kv_cache.usage.mean",
          "/engine/kvUsageMean").forEach((name, pointer) -> {
            if (line.at(pointer).isNumber()) {
              out.computeIfAbsent(name, k -> new TreeMap<>()).put(step, line.at(pointer).asDouble());
            }
          });
      assertThat(line.at("/engine/requests").isNumber()).as("steps.jsonl step %s has the engines", step).isTrue();
      line.path("phases").fields().forEachRemaining(p ->
          out.computeIfAbsent("rl.step.phase.duration." + p.getKey(), k -> new TreeMap<>()).put(step, p.getValue().asDouble()));
      line.path("rewards").path("components").fields().forEachRemaining(c ->
          out.computeIfAbsent("rl.step.reward.component." + c.getKey(), k -> new TreeMap<>()).put(step, c.getValue().asDouble()));
    }
    return out;
  }

  @Test
  void run_withBothTrackers_succeedsAndSaysEachGotEveryStep() throws Exception {
    assertThat(run.exitCode()).as(run.stdout() + run.stderr()).isZero();
    assertThat(run.stdout()).contains("trackers: mlflow " + STEPS + "/" + STEPS + " steps sent; tensorboard "
        + STEPS + "/" + STEPS + " steps sent");
    JsonNode trackers = JSON.readTree(dir.resolve("runs").resolve(RUN_ID).resolve("run.json").toFile())
        .path("telemetry").path("trackers");
    for (String t : List.of("mlflow", "tensorboard")) {
      assertThat(trackers.path(t).path("steps").asInt()).as(t).isEqualTo(STEPS);
      assertThat(trackers.path(t).path("sent").asInt()).as(t).isEqualTo(STEPS);
      assertThat(trackers.path(t).path("failed").asInt() + trackers.path(t).path("dropped").asInt()
          + trackers.path(t).path("errors").asInt()).as(t).isZero();
    }
    assertThat(trackers.path("mlflow").path("run_id").asText()).isEqualTo(mlflowRun().path("info").path("run_id").asText());
  }

  @Test
  void mlflow_everyStepsNumbersReadBackThroughTheRestApi_areThoseOfStepsJsonl() throws Exception {
    assertThat(run.exitCode()).as(run.stdout() + run.stderr()).isZero();
    Map<String, Map<Integer, Double>> mlflow = mlflowMetrics(mlflowRun());
    Map<String, Map<Integer, Double>> expected = fromStepsJsonl();

    assertThat(stepLines()).hasSize(STEPS);
    expected.forEach((name, byStep) -> assertThat(mlflow.get(name)).as(name).isEqualTo(byStep));
    // nothing else: every series of the run, each with a value at every step that had it (a phase only at the steps
    // it ran in: the checkpoint at the last)
    assertThat(mlflow).isEqualTo(expected);
  }

  @Test
  void mlflow_theRun_isNamedTaggedAndHasTheResolvedConfigAsParams() throws Exception {
    assertThat(run.exitCode()).as(run.stdout() + run.stderr()).isZero();
    JsonNode r = mlflowRun();
    JsonNode runJson = JSON.readTree(dir.resolve("runs").resolve(RUN_ID).resolve("run.json").toFile());

    assertThat(r.path("info").path("status").asText()).isEqualTo("FINISHED");
    assertThat(r.path("info").path("run_name").asText()).isEqualTo(RUN_ID);
    Map<String, String> tags = new HashMap<>();
    r.path("data").path("tags").forEach(t -> tags.put(t.path("key").asText(), t.path("value").asText()));
    assertThat(tags).containsEntry("ravel.run_id", RUN_ID)
        .containsEntry("mlflow.source.git.commit", runJson.path("versions").path("git_commit").asText());
    Map<String, String> params = new HashMap<>();
    r.path("data").path("params").forEach(p -> params.put(p.path("key").asText(), p.path("value").asText()));
    assertThat(params).containsEntry("grpo.steps", String.valueOf(STEPS)).containsEntry("run.mode", "async")
        .containsEntry("telemetry.run_id", RUN_ID).containsEntry("telemetry.trackers", "mlflow,tensorboard");
    List<String> configKeys = new ArrayList<>();
    runJson.path("config").fieldNames().forEachRemaining(configKeys::add);
    assertThat(configKeys).as("run.json's config").isNotEmpty();
    assertThat(params.keySet()).containsExactlyInAnyOrderElementsOf(configKeys);
  }

  @Test
  void tensorBoard_itsOwnReader_readsTheNumbersOfStepsJsonlAndOfMlflow() throws Exception {
    assertThat(run.exitCode()).as(run.stdout() + run.stderr()).isZero();
    Map<String, Map<Integer, Double>> tb = tensorBoardScalars();
    Map<String, Map<Integer, Double>> expected = fromStepsJsonl();

    expected.forEach((name, byStep) -> assertThat(tb.get(name)).as(name).isEqualTo(byStep));
    assertThat(tb).isEqualTo(expected);
    assertThat(tb).as("the same series, the same values, in both trackers").isEqualTo(mlflowMetrics(mlflowRun()));
  }

  /**
   * The class's run, resumed for one more step once the tests that read it as it ended have run (the last test):
   * it goes on in the same MLflow run and TensorBoard event folder.
   */
  @Test
  @Order(Integer.MAX_VALUE)
  void resume_goesOnInTheSameMlflowRunAndEventFolder() throws Exception {
    assertThat(run.exitCode()).as(run.stdout() + run.stderr()).isZero();
    Map<String, String> env = new HashMap<>(SharedRayHead.env());
    env.put("MLFLOW_TRACKING_URI", base);
    env.put("MLFLOW_EXPERIMENT_NAME", EXPERIMENT);

    RavelCommand.Result b = RavelCommand.run(env, 600, "run", example(), "grpo.steps=" + (STEPS + 1),
        "run.mode=async", "generation.workers=1", "telemetry.runs_dir=" + dir.resolve("runs"),
        "telemetry.trackers=[mlflow,tensorboard]", "--resume", RUN_ID);

    assertThat(b.exitCode()).as(b.stdout() + b.stderr()).isZero();
    assertThat(b.stdout()).contains("trackers: mlflow 1/1 steps sent; tensorboard 1/1 steps sent");
    JsonNode r = mlflowRun(RUN_ID); // one MLflow run for the Ravel run
    assertThat(r.path("info").path("status").asText()).isEqualTo("FINISHED");
    Map<String, String> params = new HashMap<>();
    r.path("data").path("params").forEach(p -> params.put(p.path("key").asText(), p.path("value").asText()));
    assertThat(params).as("a param keeps its first value").containsEntry("grpo.steps", String.valueOf(STEPS));
    Map<String, Map<Integer, Double>> expected = fromStepsJsonl(RUN_ID);
    assertThat(expected.get("rl.step.reward.mean"))
        .containsOnlyKeys(java.util.stream.IntStream.rangeClosed(1, STEPS + 1).boxed().toList());
    assertThat(mlflowMetrics(r)).isEqualTo(expected);
    assertThat(tensorBoardScalars(RUN_ID)).isEqualTo(expected);
  }

  @Test
  void run_withATrackingServerThatIsNotThere_succeedsAndCountsTheFailureOnce() throws Exception {
    int closed;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closed = s.getLocalPort();
    }
    Map<String, String> env = new HashMap<>(SharedRayHead.env());
    env.put("MLFLOW_TRACKING_URI", "http://127.0.0.1:" + closed);
    env.put("MLFLOW_TRACKING_TOKEN", SECRET);
    String id = "it-trackers-down";

    RavelCommand.Result r = RavelCommand.run(env, 600, "run", example(), "grpo.steps=3", "generation.workers=1",
        "telemetry.runs_dir=" + dir.resolve("runs"), "telemetry.run_id=" + id, "telemetry.trackers=[mlflow]");

    assertThat(r.exitCode()).as(r.stdout() + r.stderr()).isZero();
    Path runDir = dir.resolve("runs").resolve(id);
    JsonNode runJson = JSON.readTree(runDir.resolve("run.json").toFile());
    assertThat(runJson.path("status").asText()).isEqualTo("succeeded");
    assertThat(Files.readAllLines(runDir.resolve("steps.jsonl"))).hasSize(3);
    JsonNode mlflow = runJson.path("telemetry").path("trackers").path("mlflow");
    assertThat(mlflow.path("steps").asInt()).isEqualTo(3);
    assertThat(mlflow.path("sent").asInt()).isZero();
    assertThat(mlflow.path("failed").asInt() + mlflow.path("dropped").asInt()).isEqualTo(3);
    assertThat(mlflow.path("errors").asInt()).isPositive();
    assertThat(mlflow.path("first_error").asText()).contains("cannot reach http://127.0.0.1:" + closed);
    String all = r.stdout() + r.stderr();
    assertThat(all.split("tracker mlflow failed", -1)).as("the failure is printed once:\n%s", all).hasSize(2);
    assertThat(r.stdout()).contains("trackers: mlflow 0/3 steps sent");
    // the token is a secret: on no output, in no file of the run folder (spans, run.json, logs)
    assertThat(all).doesNotContain(SECRET);
    try (Stream<Path> files = Files.walk(runDir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        assertThat(Files.readString(f, StandardCharsets.ISO_8859_1)).as(f.toString()).doesNotContain(SECRET);
      }
    }
  }
}
