package dev.ravel.driver.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PortRegistryTest {
  private static final int HEAD_PORT_MIN = 20000;
  private static final int HEAD_PORT_MAX = 29999;
  private static final Instant T0 = Instant.parse("2026-12-07T12:00:00Z");

  @TempDir
  Path tmp;

  @Test
  void reserve_givesDistinctFreePortsOfTheRangeNotTaken() {
    PortRegistry registry = registry(HEAD_PORT_MIN, HEAD_PORT_MAX, T0);

    List<Integer> ports = registry.reserve(9, Set.of(HEAD_PORT_MIN + 1, HEAD_PORT_MIN + 2));

    assertThat(ports).hasSize(9).doesNotHaveDuplicates()
        .allSatisfy(p -> assertThat(p).isBetween(HEAD_PORT_MIN, HEAD_PORT_MAX - 1))
        .doesNotContain(HEAD_PORT_MIN + 1, HEAD_PORT_MIN + 2);
  }

  @Test
  void reserve_aPortGivenWithinTheHold_isNotGivenAgainThoughStillFree() throws IOException {
    int base = freeRange(8);
    // two registries on one file: two JVMs starting heads at once
    List<Integer> first = registry(base, base + 8, T0).reserve(4, Set.of());
    List<Integer> second = registry(base, base + 8, T0.plusSeconds(60)).reserve(4, Set.of());

    assertThat(second).doesNotContainAnyElementsOf(first);
    Set<Integer> all = new HashSet<>(first);
    all.addAll(second);
    assertThat(all).hasSize(8);
    assertThatThrownBy(() -> registry(base, base + 8, T0.plusSeconds(120)).reserve(1, Set.of()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("no port between " + base + " and " + (base + 8) + " is free and not given to another Ray head"
            + " in the last 3 min (" + tmp.resolve("ports") + ")");
  }

  @Test
  void reserve_afterTheHold_givesThePortsAgain() throws IOException {
    int base = freeRange(4);
    List<Integer> first = registry(base, base + 4, T0).reserve(4, Set.of());

    List<Integer> later = registry(base, base + 4, T0.plus(PortRegistry.HOLD).plusMillis(1)).reserve(4, Set.of());

    assertThat(later).containsExactlyInAnyOrderElementsOf(first);
  }

  @Test
  void reserve_linesOfAnotherFormat_areNotPortsGiven() throws IOException {
    int base = freeRange(2);
    Files.writeString(tmp.resolve("ports"), base + " not-a-time\ngarbage\n" + (base + 1) + "\n");

    assertThat(registry(base, base + 2, T0).reserve(2, Set.of())).containsExactlyInAnyOrder(base, base + 1);
  }

  @Test
  void reserve_aRegistryThatCannotBeWritten_stillGivesDistinctFreePorts() {
    PortRegistry registry = new PortRegistry(tmp.resolve("no-such-folder").resolve("ports"), PortRegistry.HOLD,
        HEAD_PORT_MIN, HEAD_PORT_MAX, Clock.fixed(T0, ZoneOffset.UTC));

    List<Integer> ports = registry.reserve(3, Set.of(HEAD_PORT_MIN));

    assertThat(ports).hasSize(3).doesNotHaveDuplicates().doesNotContain(HEAD_PORT_MIN);
  }

  @Test
  void reserve_everyPortOfTheRangeTaken_failsNamingTheRange() {
    Set<Integer> taken = new HashSet<>();
    for (int p = HEAD_PORT_MIN; p <= HEAD_PORT_MAX; p++) {
      taken.add(p);
    }

    assertThatThrownBy(() -> registry(HEAD_PORT_MIN, HEAD_PORT_MAX, T0).reserve(1, taken))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("no port between " + HEAD_PORT_MIN + " and " + HEAD_PORT_MAX + " is free");
  }

  private PortRegistry registry(int min, int max, Instant now) {
    return new PortRegistry(tmp.resolve("ports"), PortRegistry.HOLD, min, max, Clock.fixed(now, ZoneOffset.UTC));
  }

  /** The first of {@code n} consecutive loopback ports above 40000 that are all free now. */
  private static int freeRange(int n) throws IOException {
    for (int base = 40000; base < 60000; base += n) {
      List<ServerSocket> held = new ArrayList<>();
      try {
        for (int p = base; p < base + n; p++) {
          ServerSocket s = new ServerSocket();
          held.add(s);
          s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), p));
        }
        return base;
      } catch (IOException busy) {
        // the next range
      } finally {
        for (ServerSocket s : held) {
          s.close();
        }
      }
    }
    throw new IOException("no " + n + " consecutive free ports between 40000 and 60000");
  }
}
