package dev.ravel.telemetry.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

final class ProcessIdentityTest {
  private Process child;

  private Process sleeper() throws Exception {
    child = new ProcessBuilder("sleep", "300").start();
    return child;
  }

  @AfterEach
  void stopChild() {
    if (child != null) {
      child.destroyForcibly(); // our own child, not yet reaped: its PID cannot have been reused
    }
  }

  @Test
  void of_liveProcess_namesItByPidAndStartTime() throws Exception {
    Process p = sleeper();

    ProcessIdentity id = ProcessIdentity.of(p.pid()).orElseThrow();

    assertThat(id.pid()).isEqualTo(p.pid());
    assertThat(id.startTime()).matches("[0-9]+");
    assertThat(id.isAlive()).isTrue();
    assertThat(ProcessIdentity.of(p.pid())).contains(id);
  }

  @Test
  void terminate_sameProcess_signalsIt() throws Exception {
    Process p = sleeper();
    ProcessIdentity id = ProcessIdentity.of(p.pid()).orElseThrow();

    assertThat(id.terminate()).isTrue();

    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(143); // SIGTERM
    assertThat(id.awaitExit(30_000)).isTrue();
    assertThat(id.isAlive()).isFalse();
    assertThat(id.terminate()).as("an ended process is not signalled again").isFalse();
  }

  @Test
  void terminate_pidNowNamesAnotherProcess_leavesItAlone() throws Exception {
    Process p = sleeper();
    ProcessIdentity live = ProcessIdentity.of(p.pid()).orElseThrow();
    // the same PID as recorded at another start time: what a recycled PID looks like
    ProcessIdentity earlier = ProcessIdentity.recorded(p.pid(), String.valueOf(Long.parseLong(live.startTime()) - 1));

    assertThat(earlier.isAlive()).isFalse();
    assertThat(earlier.handle()).isEmpty();
    assertThat(earlier.terminate()).isFalse();
    assertThat(earlier.kill()).isFalse();

    assertThat(p.waitFor(500, TimeUnit.MILLISECONDS)).as("still running: it got no signal").isFalse();
    assertThat(live.isAlive()).isTrue();
  }

  @Test
  void stop_processIgnoringSigterm_isKilledAfterTheGrace() throws Exception {
    child = new ProcessBuilder("bash", "-c", "trap '' TERM; echo ready; sleep 300 & wait").start();
    assertThat(new String(child.getInputStream().readNBytes(6))).isEqualTo("ready\n");
    ProcessIdentity id = ProcessIdentity.of(child.pid()).orElseThrow();

    assertThat(id.stop(300)).isTrue();

    assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(child.exitValue()).isEqualTo(137); // SIGKILL
  }

  @Test
  void descendants_listsChildrenOfAHandle() throws Exception {
    child = new ProcessBuilder("bash", "-c", "sleep 300 & echo $!; wait").start();
    long grandchild = Long.parseLong(new java.io.BufferedReader(new java.io.InputStreamReader(child.getInputStream()))
        .readLine().trim());

    assertThat(ProcessIdentity.descendants(child.toHandle())).extracting(ProcessIdentity::pid).contains(grandchild);
    ProcessIdentity.of(grandchild).orElseThrow().kill();
  }

  @Test
  void recorded_blankStartTime_isRefused() {
    assertThatThrownBy(() -> ProcessIdentity.recorded(42, " ")).hasMessageContaining("startTime of pid 42");
    assertThatThrownBy(() -> ProcessIdentity.recorded(0, "1")).hasMessageContaining("pid: must be positive");
  }

  @Test
  void current_isThisProcess() {
    assertThat(ProcessIdentity.current().pid()).isEqualTo(ProcessHandle.current().pid());
    assertThat(ProcessIdentity.current().isAlive()).isTrue();
  }
}
