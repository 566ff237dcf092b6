package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.ravel.telemetry.config.ConfigException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PreflightTest {
  @TempDir
  Path tmp;

  @Test
  void writableRunsDir_missingFolderIsCreated() {
    Path runs = tmp.resolve("a/b/runs");

    Preflight.writableRunsDir(runs, Map.of());

    assertThat(runs).isDirectory();
    assertThat(runs.toFile().list()).isEmpty(); // the probe is gone
  }

  @Test
  void writableRunsDir_aFileInTheWayNamesTheKeyOrTheVariable() throws Exception {
    Path file = Files.writeString(tmp.resolve("not-a-folder"), "x");

    ConfigException e = catchThrowableOfType(ConfigException.class,
        () -> Preflight.writableRunsDir(file.resolve("runs"), Map.of()));
    assertThat(e.key()).isEqualTo("telemetry.runs_dir");
    assertThat(e.getMessage()).contains(file.toString()).doesNotContain("Exception");

    ConfigException v = catchThrowableOfType(ConfigException.class,
        () -> Preflight.writableRunsDir(file, Map.of("RAVEL_TELEMETRY_RUNS_DIR", file.toString())));
    assertThat(v.key()).isEqualTo("RAVEL_TELEMETRY_RUNS_DIR");
  }

  @Test
  void reachableRay_aListeningPortPassesAndNoAddressMeansALocalHead() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      assertThatCode(() -> Preflight.reachableRay("127.0.0.1:" + s.getLocalPort(), Map.of())).doesNotThrowAnyException();
    }
    assertThatCode(() -> Preflight.reachableRay("", Map.of())).doesNotThrowAnyException();
    assertThatCode(() -> Preflight.reachableRay("", Map.of("RAY_ADDRESS", "auto"))).doesNotThrowAnyException();
  }

  @Test
  void reachableRay_nothingListeningNamesTheKeyTheAddressAndTheRefusal() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      port = s.getLocalPort();
    }
    String address = "127.0.0.1:" + port;
    ConfigException e = catchThrowableOfType(ConfigException.class, () -> Preflight.reachableRay(address, Map.of()));
    assertThat(e.key()).isEqualTo("cluster.address");
    // the refusal of its one connect attempt, not a timeout: it answers when the port refuses (no wall-clock
    // bound here; how fast the check is on a loaded machine is not what this test is about)
    assertThat(e.getMessage()).contains("no Ray at " + address).containsIgnoringCase("connection refused");

    ConfigException env = catchThrowableOfType(ConfigException.class,
        () -> Preflight.reachableRay("", Map.of("RAY_ADDRESS", address)));
    assertThat(env.key()).isEqualTo("RAY_ADDRESS");
  }

  @Test
  void reachableRay_malformedAddressesNameWhatIsWrong() {
    assertThat(catchThrowableOfType(ConfigException.class, () -> Preflight.reachableRay("localhost", Map.of()))
        .getMessage()).contains("not host:port");
    assertThat(catchThrowableOfType(ConfigException.class, () -> Preflight.reachableRay("127.0.0.1:x", Map.of()))
        .getMessage()).contains("no port number");
    assertThat(catchThrowableOfType(ConfigException.class, () -> Preflight.reachableRay("127.0.0.1:70000", Map.of()))
        .getMessage()).contains("outside 1-65535");
  }
}
