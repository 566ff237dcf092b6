package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ProcessCpuTest {
  @Test
  void parseTicks_sumsOwnAndReapedChildrenTimeEvenWithSpacesAndParensInTheName() {
    String stat = "4242 (ray::Gen (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 20 11 20 0 9 0 1234 0 0";

    assertThat(ProcessCpu.parseTicks(stat)).isEqualTo(7 + 3 + 20 + 11);
  }

  @Test
  void read_countsAChildThatEndedAndWasWaitedForInItsParentsTree() throws Exception {
    // the inner shell burns CPU and exits; the outer one waits for it, then sleeps: only the outer is alive
    Process outer = new ProcessBuilder("bash", "-c",
        "bash -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; echo done; exec sleep 60").start();
    try {
      String line = new String(outer.getInputStream().readNBytes(5));
      assertThat(line).isEqualTo("done\n");
      ProcessCpu.Reading r = ProcessCpu.read(List.of(outer.toHandle()));

      assertThat(r.processes()).isEqualTo(1);
      assertThat(r.seconds()).isGreaterThanOrEqualTo(0.05);
    } finally {
      outer.destroy();
      outer.waitFor(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void read_goneProcessesCountNothing() {
    assertThat(ProcessCpu.read(List.of()).seconds()).isZero();
    assertThat(ProcessCpu.ticks(Long.MAX_VALUE)).isEqualTo(-1);
  }
}
