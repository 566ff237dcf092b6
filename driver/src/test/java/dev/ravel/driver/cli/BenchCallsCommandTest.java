package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import picocli.CommandLine;

import org.junit.jupiter.api.Test;

class BenchCallsCommandTest {
  @Test
  void cpuNanos_ownProcessCountsBusyWork() {
    long pid = ProcessHandle.current().pid();
    long before = BenchCallsCommand.cpuNanos(pid);
    long x = 0;
    long end = System.nanoTime() + 300_000_000L;
    while (System.nanoTime() < end) {
      x += Long.numberOfTrailingZeros(x + System.nanoTime());
    }
    assertThat(x).isPositive();
    assertThat(before).isNotNegative();
    // 300 ms busy on this thread: at least one 10 ms tick more
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
