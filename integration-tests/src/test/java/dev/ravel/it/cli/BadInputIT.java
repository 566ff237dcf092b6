package dev.ravel.it.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.Procs;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad input through {@code bin/ravel}, as a user types it, one case of each kind (the driver's
 * {@code BadInputTest} runs every case in-process): each exits with the documented code (2: usage or
 * configuration error) without waiting on anything (well within 30 s, ten times a loaded machine's JVM
 * start; a Ray head would take minutes), prints one line on stderr that names the option, key, variable or
 * file, no stack trace and nothing on stdout, and starts no Ray (no raylet or GCS is left, or was ever
 * added). Then the two OpenTelemetry switches on a real run.
 */
final class BadInputIT {
  static final int USAGE = 2;

  @TempDir
  static Path tmp;
  static Path config;
  static String closedAddress;
  /** Every process started for this class carries {@code TAG=RUN}: what is left of them is easy to find. */
  static final String TAG = "RAVEL_BAD_INPUT_IT_TAG";
  static final String RUN = java.util.UUID.randomUUID().toString();

  @BeforeAll
  static void setUp() throws IOException {
    config = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize()
        .resolve("examples/grpo-sync.yaml");
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      closedAddress = "127.0.0.1:" + s.getLocalPort(); // closed again: nothing listens there
    }
    Files.writeString(tmp.resolve("flow.yaml"), "grpo:\n  steps: [1, 2\n  x: 1\n");
    Files.writeString(tmp.resolve("tab.yaml"), "grpo:\n\tsteps: 3\n");
    Files.writeString(tmp.resolve("list.yaml"), "- grpo\n- run\n");
    Files.writeString(tmp.resolve("a-file"), "not a folder");
  }

  @AfterAll
  static void nothingLeft() throws IOException {
    assertThat(tagged()).isEmpty();
  }

  /** The live processes started from this class's environments (a Ray head, had one been started), by PID. */
  static Set<Long> tagged() throws IOException {
    Set<Long> out = new java.util.HashSet<>();
    for (Procs.Proc p : Procs.all()) {
      if (Procs.environ(p.pid()).orElse("").contains(TAG + "=" + RUN)) {
        out.add(p.pid());
      }
    }
    return out;
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
    // a handful through the launcher, one of each kind; every case runs in-process in the driver's BadInputTest
    return Stream.of(
        bad("CONFIG", "run"),
        bad("frobnicate", "frobnicate"),
        bad(tmp.resolve("tab.yaml") + ":2:1", "run", tmp.resolve("tab.yaml").toString()),
        bad("grpo.stepz", "run", c, "grpo.stepz=1"),
        bad("grpo.temperature", "run", c, "grpo.temperature=0"),
        bad("telemetry.runs_dir", "run", c, "telemetry.runs_dir=" + file),
        badEnv("RAY_ADDRESS", Map.of("RAY_ADDRESS", closedAddress), "run", c),
        badEnv("OTEL_TRACES_EXPORTER", Map.of("OTEL_TRACES_EXPORTER", "zipkin"), "run", c));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void badInput_exitsWithTheUsageCodeAndOneLineNamingIt(String label, Map<String, String> extraEnv,
      List<String> args, String names) throws Exception {
    Map<String, String> env = new HashMap<>(TestEnv.clean());
    env.putAll(extraEnv);
    env.put(TAG, RUN);
    // 60 s is a hang guard (a command that waited on a Ray that is not there would hit it), not a speed claim
    RavelCommand.Result r = RavelCommand.run(env, 60, args.toArray(String[]::new));

    List<String> lines = r.stderr().lines().filter(l -> !l.isBlank()).toList();
    assertThat(r.exitCode()).as("exit code; stderr: %s", r.stderr()).isEqualTo(USAGE);
    assertThat(lines).as("stderr").hasSize(1);
    assertThat(lines.get(0)).contains(names).doesNotContain("Exception", "\tat ");
    assertThat(r.stdout()).as("stdout").isEmpty();
    // whatever other Rays run on this machine: none of this command's own processes outlives it
    assertThat(tagged()).as("processes the command started (a Ray head, say)").isEmpty();
  }

  /** On the shared head: what the switch governs is the driver's and its actors' telemetry, not the head's. */
  @Test
  void otelTracesExporterNone_aRealRunWritesNoSpans() throws Exception {
    Map<String, String> env = new HashMap<>(SharedRayHead.env());
    env.put("OTEL_TRACES_EXPORTER", "none");
    Path runs = tmp.resolve("runs-none");
    RavelCommand.Result r = RavelCommand.run(env, 180, "run", config.toString(), "grpo.steps=1",
        "grpo.prompts_per_step=2", "grpo.group_size=2", "generation.workers=1", "telemetry.run_id=it-otel-none",
        "telemetry.runs_dir=" + runs);

    assertThat(r.exitCode()).as(r.stderr()).isZero();
    Path run = runs.resolve("it-otel-none");
    assertThat(run.resolve("run.json")).isRegularFile();
    assertThat(run.resolve("steps.jsonl")).isRegularFile();
    List<String> files = new ArrayList<>();
    try (Stream<Path> s = Files.list(run)) {
      s.forEach(p -> files.add(p.getFileName().toString()));
    }
    assertThat(files.stream().filter(f -> f.startsWith("traces-")).collect(Collectors.toList())).isEmpty();
    assertThat(new com.fasterxml.jackson.databind.ObjectMapper().readTree(run.resolve("run.json").toFile())
        .path("telemetry").path("exporter").asText()).isEqualTo("none");
  }
}
