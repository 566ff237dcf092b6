package dev.ravel.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.it.support.Procs;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.TestEnv;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A local head that the driver started lives exactly as long as the driver: SIGTERM, SIGINT or SIGKILL to
 * a running {@code bin/ravel run}, and within 10 s (SIGKILL) or 20 s (SIGTERM, SIGINT: the step in progress
 * ends, the spans are flushed, run.json says {@code interrupted}) no process of that head remains (by its PIDs
 * and its process group); a head the driver did not start survives the driver's SIGKILL.
 */
final class HeadLifetimeIT {
  private static final Pattern HEAD = Pattern.compile("Ray head started at 127\\.0\\.0\\.1:(\\d+) \\(pid (\\d+),");

  @TempDir
  Path tmp;

  @ParameterizedTest
  @ValueSource(strings = {"TERM", "INT", "KILL"})
  void driverSignalled_noProcessOfItsHeadRemainsAndTheNextRunSucceeds(String signal) throws Exception {
    Running run = start(TestEnv.clean());
    long headPid = -1;
    try {
      Matcher m = run.await(HEAD, "step   3/");
      headPid = Long.parseLong(m.group(2));
      List<Long> headProcesses = new ArrayList<>(Procs.group(headPid));
      headProcesses.addAll(Procs.descendants(headPid));
      assertThat(headProcesses).as("the head's processes").hasSizeGreaterThan(3);

      signal(run.process.pid(), signal);
      // SIGTERM and SIGINT: the step in progress ends, spans are flushed and the head is stopped first
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(signal.equals("KILL") ? 10 : 20);
      while (System.nanoTime() < deadline && (!Procs.alive(headProcesses).isEmpty() || !Procs.group(headPid).isEmpty())) {
        Thread.sleep(100);
      }
      assertThat(Procs.alive(headProcesses)).as("head processes 10 s (KILL) or 20 s after SIG%s to the driver", signal)
          .isEmpty();
      assertThat(Procs.group(headPid)).as("the head's process group").isEmpty();
      assertThat(run.process.waitFor(60, TimeUnit.SECONDS)).as("the driver ends").isTrue();
      List<Path> runDirs;
      try (var dirs = Files.list(tmp.resolve("runs"))) {
        runDirs = dirs.toList();
      }
      assertThat(runDirs).hasSize(1);
      Path runJson = runDirs.get(0).resolve("run.json");
      if (signal.equals("KILL")) {
        assertThat(Files.exists(runJson)).as("a SIGKILLed driver can write nothing").isFalse();
      } else {
        com.fasterxml.jackson.databind.JsonNode summary = new com.fasterxml.jackson.databind.ObjectMapper()
            .readTree(runJson.toFile());
        assertThat(summary.get("status").asText()).isEqualTo("interrupted");
        int steps = summary.get("steps").asInt();
        assertThat(steps).isGreaterThanOrEqualTo(3);
        assertThat(Files.readAllLines(runDirs.get(0).resolve("steps.jsonl"))).hasSize(steps);
        // the completed steps' spans were flushed: every step in run.json has its root span in the driver's file
        dev.ravel.telemetry.traces.RunTraces traces = dev.ravel.telemetry.traces.RunTraces.readDir(runDirs.get(0));
        assertThat(traces.named("rl.grpo.step")).hasSizeGreaterThanOrEqualTo(steps);
        assertThat(Files.readString(run.out())).contains("interrupted (SIG" + signal + ") after " + steps + " steps; go on with:");
        assertThat(run.process.exitValue()).isEqualTo(signal.equals("TERM") ? 143 : 130);
      }
    } finally {
      run.stop();
      stopLeftover(headPid);
    }

    RavelCommand.Result next = RavelCommand.run(TestEnv.clean(), 300, "run",
        home().resolve("examples/grpo-sync.yaml").toString(), "grpo.steps=1",
        "telemetry.runs_dir=" + tmp.resolve("runs-next"));
    assertThat(next.exitCode()).as(next.stdout() + next.stderr()).isZero();
    assertThat(next.stdout()).contains("succeeded: 1 steps");
  }

  @Test
  void driverKilled_aHeadItDidNotStartKeepsRunning() throws Exception {
    try (LocalRayHead head = LocalRayHead.builder(RayHome.locate(TestEnv.clean())).environment(TestEnv.clean())
        .start()) {
      // the head's own processes (ray start, GCS, raylet, dashboard, agents), before any driver joins
      List<Long> own = Procs.group(head.pid());
      assertThat(own).hasSizeGreaterThan(3);
      Map<String, String> env = new HashMap<>(TestEnv.clean());
      env.put("RAY_ADDRESS", head.address());
      Running run = start(env);
      try {
        run.await(Pattern.compile("Ray at " + Pattern.quote(head.address())), "step   3/");

        signal(run.process.pid(), "KILL");
        assertThat(run.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
        Thread.sleep(3000);

        assertThat(head.isAlive()).isTrue();
        assertThat(Procs.alive(own)).as("the head's own processes after the driver's SIGKILL")
            .containsExactlyInAnyOrderElementsOf(own);
      } finally {
        run.stop();
      }
    }
  }

  private record Running(Process process, Path out) {
    Matcher await(Pattern pattern, String after) throws Exception {
      return RavelCommand.awaitOutput(out, process, pattern, after, 240);
    }

    void stop() throws InterruptedException {
      if (process.isAlive()) {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  private Running start(Map<String, String> env) throws IOException {
    Path out = Files.createTempFile(tmp, "driver", ".out");
    // SIGINT back to its default first: a test run in the background (CI, nohup) inherits it ignored, and a
    // process started with SIGINT ignored rightly ignores it (perl resets it and execs: the PID stays the driver's)
    ProcessBuilder pb = new ProcessBuilder("perl", "-e", "$SIG{INT} = 'DEFAULT'; exec @ARGV or die $!",
        home().resolve("bin/ravel").toString(), "run",
        home().resolve("examples/grpo-sync.yaml").toString(), "grpo.steps=20000",
        "telemetry.runs_dir=" + tmp.resolve("runs")).redirectErrorStream(true).redirectOutput(out.toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    return new Running(pb.start(), out);
  }

  private static Path home() {
    return Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
  }

  /** Sends SIG{@code name} to {@code pid} (bin/ravel execs the JVM, so this is the driver itself). */
  private static void signal(long pid, String name) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(pid)).inheritIO().start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(kill.exitValue()).isZero();
  }

  /** After a failure: whatever of the head is left, by its processes' PIDs. */
  private static void stopLeftover(long headPid) throws IOException {
    if (headPid > 0) {
      for (long pid : Procs.group(headPid)) {
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
  }
}
