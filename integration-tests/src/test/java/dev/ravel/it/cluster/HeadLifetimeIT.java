package dev.ravel.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.TestEnv;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A local head that the driver started lives exactly as long as the driver: SIGTERM, SIGINT or SIGKILL to
 * a running {@code bin/ravel run}, and within 10 s no process of that head remains (by its PIDs and its
 * process group); a head the driver did not start survives the driver's SIGKILL.
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
      List<Long> headProcesses = processGroup(headPid);
      headProcesses.addAll(descendants(headPid));
      assertThat(headProcesses).as("the head's processes").hasSizeGreaterThan(3);

      signal(run.process.pid(), signal);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (System.nanoTime() < deadline && (!alive(headProcesses).isEmpty() || !processGroup(headPid).isEmpty())) {
        Thread.sleep(100);
      }
      assertThat(alive(headProcesses)).as("head processes 10 s after SIG%s to the driver", signal).isEmpty();
      assertThat(processGroup(headPid)).as("the head's process group").isEmpty();
      assertThat(run.process.waitFor(60, TimeUnit.SECONDS)).as("the driver ends").isTrue();
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
      List<Long> own = processGroup(head.pid());
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
        assertThat(alive(own)).as("the head's own processes after the driver's SIGKILL")
            .containsExactlyInAnyOrderElementsOf(own);
      } finally {
        run.stop();
      }
    }
  }

  private record Running(Process process, Path out) {
    Matcher await(Pattern pattern, String after) throws Exception {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
      while (System.nanoTime() < deadline) {
        String text = Files.readString(out, StandardCharsets.UTF_8);
        Matcher m = pattern.matcher(text);
        if (m.find() && text.contains(after)) {
          return m;
        }
        if (!process.isAlive()) {
          throw new AssertionError("the driver ended early (" + process.exitValue() + "):\n" + text);
        }
        Thread.sleep(200);
      }
      throw new AssertionError("no '" + pattern + "' then '" + after + "' within 240 s:\n" + Files.readString(out));
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
    ProcessBuilder pb = new ProcessBuilder(home().resolve("bin/ravel").toString(), "run",
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

  /** After a failure: whatever of the head is left, by the head's PID and its descendants' PIDs. */
  private static void stopLeftover(long headPid) throws IOException {
    if (headPid > 0) {
      for (long pid : processGroup(headPid)) {
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
  }

  /** The processes whose process group is {@code pgid} (zombies left out). */
  private static List<Long> processGroup(long pgid) throws IOException {
    List<Long> out = new ArrayList<>();
    for (long[] s : stats()) {
      if (s[2] == pgid) {
        out.add(s[0]);
      }
    }
    return out;
  }

  /** Every process below {@code root} (zombies left out). */
  private static List<Long> descendants(long root) throws IOException {
    List<long[]> all = stats();
    Map<Long, Long> parent = new HashMap<>();
    all.forEach(s -> parent.put(s[0], s[1]));
    List<Long> out = new ArrayList<>();
    for (long[] s : all) {
      long p = s[1];
      for (int depth = 0; depth < 64 && p > 1; depth++) {
        if (p == root) {
          out.add(s[0]);
          break;
        }
        p = parent.getOrDefault(p, 1L);
      }
    }
    return out;
  }

  /** pid, ppid, pgid of every live (not zombie) process, from /proc. */
  private static List<long[]> stats() throws IOException {
    List<long[]> out = new ArrayList<>();
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : procs.filter(x -> x.getFileName().toString().matches("\\d+")).toList()) {
        try {
          String stat = Files.readString(p.resolve("stat"));
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          if (!f[0].equals("Z")) {
            out.add(new long[] {Long.parseLong(p.getFileName().toString()), Long.parseLong(f[1]), Long.parseLong(f[2])});
          }
        } catch (NoSuchFileException e) {
          // ended meanwhile
        }
      }
    }
    return out;
  }

  private static List<Long> alive(List<Long> pids) throws IOException {
    List<Long> live = new ArrayList<>();
    List<Long> all = stats().stream().map(s -> s[0]).toList();
    for (Long pid : pids) {
      if (all.contains(pid)) {
        live.add(pid);
      }
    }
    return live;
  }
}
