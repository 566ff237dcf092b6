package dev.ravel.driver.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * The head supervisor script on its own: a stand-in driver (a {@code sleep} this test starts) and a
 * stand-in head (a shell with a child, as {@code ray start} has GCS and raylet), all stopped by PID.
 */
@EnabledOnOs(OS.LINUX)
final class HeadSupervisorTest {
  @TempDir
  Path tmp;

  private final List<Process> started = new ArrayList<>();
  /** The recorded head processes, as handles taken while they ran: a handle carries its process's start time. */
  private final List<ProcessHandle> recordedHandles = new ArrayList<>();

  @AfterEach
  void stopAll() {
    for (Process p : started) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
    // never a PID read back from a file: by now it may name another process (pid_max is small, PIDs recycle)
    recordedHandles.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
  }

  @Test
  void ownStartTime_isThisProcesssStartTimeInTicks() {
    assertThat(LocalRayHead.ownStartTime()).matches("[0-9]+");
  }

  @Test
  void driverKilled_theHeadsWholeProcessGroupIsStoppedAndTheSupervisorEnds() throws Exception {
    Process driver = start(new ProcessBuilder("sleep", "300"));
    Process supervisor = supervise(driver.pid(), startTimeOf(driver.pid()));
    long head = awaitRecorded("head");
    long child = awaitRecorded("child");
    awaitChecksThatFoundTheDriverAlive(supervisor, 2);
    assertThat(alive(head)).isTrue();
    assertThat(alive(child)).isTrue();

    driver.destroyForcibly(); // SIGKILL: nothing in the driver runs
    assertThat(driver.waitFor(60, TimeUnit.SECONDS)).isTrue();

    assertThat(supervisor.waitFor(60, TimeUnit.SECONDS)).as("supervisor ends").isTrue();
    assertThat(alive(head)).as("head").isFalse();
    assertThat(alive(child)).as("head's child").isFalse();
    assertThat(Files.readString(tmp.resolve("log"), StandardCharsets.UTF_8)).contains("driver " + driver.pid()
        + " is gone");
  }

  @Test
  void recycledDriverPid_countsAsGone() throws Exception {
    // this JVM is alive, but with another start time it is not the driver the head was started for
    long me = ProcessHandle.current().pid();
    Process supervisor = supervise(me, "1");

    assertThat(supervisor.waitFor(60, TimeUnit.SECONDS)).as("supervisor ends").isTrue();
    assertThat(Files.readString(tmp.resolve("log"), StandardCharsets.UTF_8)).contains("driver " + me + " is gone");
    // its first check finds the driver gone, which may be before the head has written its PID: whatever the head
    // had started by then is stopped with it
    recorded("head").ifPresent(head -> assertThat(alive(head)).as("head").isFalse());
    recorded("child").ifPresent(child -> assertThat(alive(child)).as("head's child").isFalse());
  }

  @Test
  void supervisorTerminated_stopsTheHeadEvenIfItIgnoresSigterm() throws Exception {
    Process supervisor = supervise(ProcessHandle.current().pid(), LocalRayHead.ownStartTime(), "trap '' TERM; ");
    long head = awaitRecorded("head");
    long child = awaitRecorded("child");

    supervisor.destroy(); // SIGTERM, as LocalRayHead.close() sends

    assertThat(supervisor.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(alive(head)).isFalse();
    assertThat(alive(child)).isFalse();
  }

  @Test
  void headExitsByItself_theSupervisorEndsWithItsExitCode() throws Exception {
    Process supervisor = start(new ProcessBuilder("bash", "-c", LocalRayHead.supervisorScript(),
        "ravel-head-supervisor", String.valueOf(ProcessHandle.current().pid()), LocalRayHead.ownStartTime(), "--",
        "bash", "-c", "exit 3").redirectErrorStream(true).redirectOutput(tmp.resolve("log").toFile()));

    assertThat(supervisor.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(supervisor.exitValue()).isEqualTo(3);
  }

  private Process supervise(long driverPid, String driverStart) throws IOException {
    return supervise(driverPid, driverStart, "");
  }

  private Process supervise(long driverPid, String driverStart, String prefix) throws IOException {
    String headScript = prefix + "echo $$ > '" + tmp.resolve("head") + "'; sleep 300 & echo $! > '"
        + tmp.resolve("child") + "'; wait";
    return start(new ProcessBuilder("bash", "-c", LocalRayHead.supervisorScript(), "ravel-head-supervisor",
        String.valueOf(driverPid), driverStart, "--", "bash", "-c", headScript)
        .redirectErrorStream(true).redirectOutput(tmp.resolve("log").toFile()));
  }

  private Process start(ProcessBuilder pb) throws IOException {
    Process p = pb.start();
    started.add(p);
    return p;
  }

  private static String startTimeOf(long pid) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    return stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ")[19];
  }

  private java.util.Optional<Long> recorded(String name) {
    try {
      String s = Files.readString(tmp.resolve(name)).trim();
      return s.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(Long.parseLong(s));
    } catch (IOException | NumberFormatException e) {
      return java.util.Optional.empty();
    }
  }

  private long awaitRecorded(String name) throws InterruptedException {
    for (int i = 0; i < 600; i++) {
      var pid = recorded(name);
      if (pid.isPresent()) {
        ProcessHandle.of(pid.get()).ifPresent(recordedHandles::add);
        return pid.get();
      }
      Thread.sleep(50);
    }
    throw new AssertionError("no " + name + " PID recorded within 30 s");
  }

  /**
   * Waits until the supervisor has started {@code n} distinct {@code sleep 0.5} children after this call: it
   * starts one only after a check that found the driver (and the head) alive, so by then it has had at least
   * one chance to stop the head with the driver alive, and (had it wrongly judged the driver gone) it would
   * have been stopping the group instead. Polling its children, not a fixed wait, however slowly it runs.
   */
  private static void awaitChecksThatFoundTheDriverAlive(Process supervisor, int n) throws InterruptedException {
    java.util.Set<Long> pauses = new java.util.HashSet<>();
    java.util.Set<Long> before = new java.util.HashSet<>();
    supervisor.children().filter(HeadSupervisorTest::pauseBetweenChecks).forEach(c -> before.add(c.pid()));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (pauses.size() < n) {
      assertThat(System.nanoTime()).as("%d checks of the driver within 60 s", n).isLessThan(deadline);
      assertThat(supervisor.isAlive()).as("supervisor still running").isTrue();
      supervisor.children().filter(HeadSupervisorTest::pauseBetweenChecks).map(ProcessHandle::pid)
          .filter(pid -> !before.contains(pid)).forEach(pauses::add);
      Thread.sleep(20);
    }
  }

  private static boolean pauseBetweenChecks(ProcessHandle p) {
    ProcessHandle.Info info = p.info();
    return info.command().map(c -> c.endsWith("/sleep")).orElse(false)
        && info.arguments().map(a -> List.of(a).equals(List.of("0.5"))).orElse(false);
  }

  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false) && !zombie(pid);
  }

  private static boolean zombie(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      return stat.substring(stat.lastIndexOf(')') + 2).startsWith("Z");
    } catch (IOException e) {
      return false;
    }
  }
}
