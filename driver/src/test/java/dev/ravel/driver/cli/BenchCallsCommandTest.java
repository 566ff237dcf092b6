package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import picocli.CommandLine;

import org.junit.jupiter.api.Test;

class BenchCallsCommandTest {
  @Test
  void cpuNanos_ownProcessCountsBusyWork() {
    long pid = ProcessHandle.current().pid();
    long before = BenchCallsCommand.cpuNanos(pid);
    // busy until this thread has had 50 ms of CPU by its own count, however long a loaded machine takes to give
    // it that (60 s of wall time is a hang guard), not for a fixed wall-clock time it may spend descheduled
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long threadBefore = threads.getCurrentThreadCpuTime();
    long x = 0;
    long giveUp = System.nanoTime() + 60_000_000_000L;
    while (threads.getCurrentThreadCpuTime() - threadBefore < 50_000_000L && System.nanoTime() < giveUp) {
      x += Long.numberOfTrailingZeros(x + System.nanoTime());
    }
    assertThat(threads.getCurrentThreadCpuTime() - threadBefore).as("this thread's CPU ns").isGreaterThanOrEqualTo(
        50_000_000L);
    assertThat(x).isPositive();
    assertThat(before).isNotNegative();
    // 50 ms busy on this thread: the process's count has at least one 10 ms tick more
    assertThat(BenchCallsCommand.cpuNanos(pid)).isGreaterThanOrEqualTo(before + 10_000_000L);
  }

  @Test
  void cpuNanos_noSuchProcessIsMinusOne() {
    assertThat(BenchCallsCommand.cpuNanos(Long.MAX_VALUE)).isEqualTo(-1);
  }

  @Test
  void measure_unknownFanoutLanguage_isRefusedBeforeAnythingStarts() {
    BenchCallsCommand c = new BenchCallsCommand();
    new CommandLine(c).parseArgs("--fanout-actors", "2", "--fanout-languages", "java,rust");
    assertThatThrownBy(c::measure).isInstanceOf(CommandLine.ParameterException.class)
        .hasMessageContaining("--fanout-languages: java or python, not 'rust'");
  }

  @Test
  void measure_fanoutWithoutABody_isRefused() {
    BenchCallsCommand c = new BenchCallsCommand();
    new CommandLine(c).parseArgs("--fanout-actors", "2", "--fanout-spin-ms", "0");
    assertThatThrownBy(c::measure).isInstanceOf(CommandLine.ParameterException.class)
        .hasMessageContaining("--fanout-spin-ms more than 0");
  }
}
