package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad input through the command line's own {@link RavelCli#execute(Map, String...)}, in this JVM, with the
 * environment given per case: each exits with the usage code (2), prints one line on stderr that names the
 * option, key, variable or file, no stack trace and nothing on stdout, and starts nothing: no process carries
 * the case's own tag (an environment variable every process started from that environment inherits, a Ray head
 * included), whatever other Rays run on the machine. {@code BadInputIT} runs a handful of the same through
 * {@code bin/ravel}, for the launcher.
 */
final class BadInputTest {
  @TempDir
  static Path tmp;
  static Path config;
  static String closedAddress;
  static final String TAG = "RAVEL_BAD_INPUT_TEST_TAG";

  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private PrintStream savedErr;
  private PrintStream savedOut;

  @BeforeAll
  static void setUp() throws IOException {
    config = Path.of("..", "examples", "grpo-sync.yaml").toAbsolutePath().normalize();
    assertThat(config).isRegularFile();
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      closedAddress = "127.0.0.1:" + s.getLocalPort(); // closed again: nothing listens there
    }
    Files.writeString(tmp.resolve("flow.yaml"), "grpo:\n  steps: [1, 2\n  x: 1\n");
    Files.writeString(tmp.resolve("tab.yaml"), "grpo:\n\tsteps: 3\n");
    Files.writeString(tmp.resolve("list.yaml"), "- grpo\n- run\n");
    Files.writeString(tmp.resolve("a-file"), "not a folder");
  }

  @BeforeEach
  void capture() {
    savedErr = System.err;
    savedOut = System.out;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restore() {
    System.setErr(savedErr);
    System.setOut(savedOut);
  }

  /** The processes of this machine whose environment holds {@code TAG=tag}, by PID. */
  static Set<Long> tagged(String tag) throws IOException {
    String mark = TAG + "=" + tag;
    Set<Long> found = new HashSet<>();
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : procs.filter(x -> x.getFileName().toString().matches("\\d+")).toList()) {
        try {
          String environ = new String(Files.readAllBytes(p.resolve("environ")), StandardCharsets.UTF_8);
          if (environ.contains(mark)) {
            found.add(Long.parseLong(p.getFileName().toString()));
          }
        } catch (IOException e) {
          // ended meanwhile, or not ours to read
        }
      }
    }
    return found;
  }

  static Arguments bad(String names, String... args) {
    return Arguments.of(String.join(" ", args), Map.of(), List.of(args), names);
  }

  static Arguments badEnv(String names, Map<String, String> env, String... args) {
    return Arguments.of(env + " " + String.join(" ", args), env, List.of(args), names);
  }

  static Stream<Arguments> cases() {
    String c = config.toString();
    String file = tmp.resolve("a-file").toString();
    return Stream.of(
        // the command line
        bad("CONFIG", "run"),
        bad("--bogus", "run", c, "--bogus"),
        bad("frobnicate", "frobnicate"),
        bad("RUN_ID", "trace"),
        bad("--max-waterfalls", "report", "--max-waterfalls", "many", "r1"),
        bad("--calls", "bench-calls", "--calls", "0"),
        bad("--only", "bench-calls", "--only", "fast"),
        bad("--bogus", "runs", "--bogus"),
        bad("after --", "submit", "--address", "http://" + closedAddress),
        bad("--port", "serve", "--port", "http"),
        // the config file
        bad("config file not found", "run", tmp.resolve("missing.yaml").toString()),
        bad(tmp.resolve("flow.yaml") + ":3:", "run", tmp.resolve("flow.yaml").toString()),
        bad(tmp.resolve("tab.yaml") + ":2:1", "run", tmp.resolve("tab.yaml").toString()),
        bad("expected a mapping", "run", tmp.resolve("list.yaml").toString()),
        bad("foo", "run", c, "foo.bar=1"),
        bad("grpo.stepz", "run", c, "grpo.stepz=1"),
        bad("grpo.steps", "run", c, "grpo.steps"),
        // values
        bad("grpo.steps", "run", c, "grpo.steps=0"),
        bad("grpo.steps", "run", c, "grpo.steps=abc"),
        bad("grpo.prompts_per_step", "run", c, "grpo.prompts_per_step=0"),
        bad("grpo.group_size", "run", c, "grpo.group_size=1"),
        bad("grpo.max_new_tokens", "run", c, "grpo.max_new_tokens=0"),
        bad("grpo.temperature", "run", c, "grpo.temperature=0"),
        bad("grpo.temperature", "run", c, "grpo.temperature=-1"),
        bad("grpo.top_p", "run", c, "grpo.top_p=0"),
        bad("grpo.top_p", "run", c, "grpo.top_p=1.5"),
        bad("grpo.learning_rate", "run", c, "grpo.learning_rate=0"),
        bad("grpo.clip_epsilon", "run", c, "grpo.clip_epsilon=2"),
        bad("grpo.kl_beta", "run", c, "grpo.kl_beta=-1"),
        bad("grpo.loss_type", "run", c, "grpo.loss_type=ppo"),
        bad("grpo.scale_rewards", "run", c, "grpo.scale_rewards=rank"),
        bad("grpo.kl_estimator", "run", c, "grpo.kl_estimator=k4"),
        bad("grpo.clip_epsilon_high", "run", c, "grpo.clip_epsilon_low=0.3", "grpo.clip_epsilon_high=0.2"),
        bad("grpo.clip_ratio_c", "run", c, "grpo.clip_ratio_c=0.5"),
        bad("grpo.ppo_epochs", "run", c, "grpo.ppo_epochs=0"),
        bad("trainer.micro_batch_size", "run", c, "trainer.micro_batch_size=5"),
        bad("trainer.lr_scheduler", "run", c, "trainer.lr_scheduler=step"),
        bad("trainer.warmup_steps", "run", c, "grpo.steps=3", "trainer.warmup_steps=4"),
        bad("grpo.groups_per_call", "run", c, "grpo.groups_per_call=-1"),
        bad("grpo.checkpoint_every", "run", c, "grpo.checkpoint_every=-1"),
        bad("run.seed", "run", c, "run.seed=-1"),
        bad("run.seed", "run", c, "run.seed=x"),
        bad("run.mode", "run", c, "run.mode=turbo"),
        bad("generation.workers", "run", c, "generation.workers=0"),
        bad("generation.kv_token_budget", "run", c, "generation.kv_token_budget=1"),
        bad("generation.max_running_requests", "run", c, "generation.max_running_requests=0"),
        bad("generation.max_concurrency", "run", c, "generation.max_concurrency=0"),
        bad("generation.backend", "run", c, "generation.backend=grpc"),
        bad("generation.ignore_eos", "run", c, "generation.ignore_eos=maybe"),
        bad("generation.runtime", "run", c, "generation.runtime=rust"),
        bad("trainer.runtime", "run", c, "trainer.runtime=python"),
        bad("cluster.worker_heap_mb", "run", c, "cluster.worker_heap_mb=10"),
        bad("cluster.num_cpus", "run", c, "cluster.num_cpus=-1"),
        bad("cluster.max_restarts", "run", c, "cluster.max_restarts=-1"),
        bad("generation.placement", "run", c, "generation.placement=everywhere"),
        bad("--resume", "run", c, "--resume", "no-such-run"),
        bad("telemetry.exporter", "run", c, "telemetry.exporter=kafka"),
        bad("telemetry.preset", "run", c, "telemetry.preset=everything"),
        bad("telemetry.engine_sample_ratio", "run", c, "telemetry.engine_sample_ratio=2"),
        bad("telemetry.trackers", "run", c, "telemetry.trackers=[mlflow,wandb]"),
        bad("MLFLOW_TRACKING_URI", "run", c, "telemetry.trackers=[mlflow,tensorboard]"),
        badEnv("MLFLOW_TRACKING_URI", Map.of("MLFLOW_TRACKING_URI", "file:///tmp/mlruns"), "run", c,
            "telemetry.trackers=mlflow"),
        badEnv("telemetry.trackers", Map.of("RAVEL_RAY_VENV", tmp.resolve("no-venv").toString()), "run", c,
            "telemetry.trackers=tensorboard"),
        badEnv("MLFLOW_TRACKING_PASSWORD", Map.of("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000",
            "MLFLOW_TRACKING_USERNAME", "me"), "run", c, "telemetry.trackers=mlflow"),
        // the world around the run, before anything starts
        bad("telemetry.runs_dir", "run", c, "telemetry.runs_dir=" + file),
        bad("cluster.address", "run", c, "cluster.address=" + closedAddress),
        bad("cluster.address", "run", c, "cluster.address=localhost"),
        badEnv("RAY_ADDRESS", Map.of("RAY_ADDRESS", closedAddress), "run", c),
        badEnv("OTEL_TRACES_EXPORTER", Map.of("OTEL_TRACES_EXPORTER", "zipkin"), "run", c),
        badEnv("OTEL_SDK_DISABLED", Map.of("OTEL_SDK_DISABLED", "perhaps"), "run", c),
        badEnv("OTEL_METRICS_EXPORTER", Map.of("OTEL_METRICS_EXPORTER", "prometheus"), "run", c,
            "telemetry.exporter=otlp"),
        badEnv("OTEL_EXPORTER_OTLP_PROTOCOL", Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon"), "run", c,
            "telemetry.exporter=otlp"),
        badEnv("RAVEL_TELEMETRY_PRESET", Map.of("RAVEL_TELEMETRY_PRESET", "loud"), "run", c));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void execute_badInputExitsWithTheUsageCodeAndOneLineNamingIt(String label, Map<String, String> extraEnv,
      List<String> args, String names) throws IOException {
    Map<String, String> env = new HashMap<>(System.getenv());
    env.keySet().removeIf(k -> k.startsWith("OTEL_") || k.startsWith("RAVEL_") || k.startsWith("MLFLOW_")
        || k.equals("RAY_ADDRESS"));
    env.putAll(extraEnv);
    String tag = java.util.UUID.randomUUID().toString();
    env.put(TAG, tag);
    List<String> argv = new ArrayList<>(args);
    if (argv.size() >= 2 && argv.get(0).equals("run") && argv.get(1).equals(config.toString())) {
      argv.add(2, "telemetry.runs_dir=" + tmp.resolve("runs")); // a case's own runs_dir comes later and wins
    }

    int code = RavelCli.execute(env, argv.toArray(String[]::new));

    String stderr = err.toString(StandardCharsets.UTF_8);
    List<String> lines = stderr.lines().filter(l -> !l.isBlank()).toList();
    assertThat(code).as("exit code; stderr: %s", stderr).isEqualTo(ExitCodes.USAGE);
    assertThat(lines).as("stderr").hasSize(1);
    assertThat(lines.get(0)).contains(names).doesNotContain("Exception", "\tat ");
    assertThat(out.toString(StandardCharsets.UTF_8)).as("stdout").isEmpty();
    assertThat(tagged(tag)).as("processes started from the case's environment (a Ray head, say)").isEmpty();
  }
}
