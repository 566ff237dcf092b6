package dev.ravel.driver.session;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class ClusterDashboardTest {
  @TempDir
  Path dir;

  /** A stand-in for the virtualenv's python: a script that answers as READ_SCRIPT would. */
  private Path python(String body) throws IOException {
    Path p = dir.resolve("python");
    Files.writeString(p, "#!/bin/sh\n" + body + "\n");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
    return p;
  }

  @Test
  void parse_hostPortOrUrl_isTheDashboardsUrl() {
    assertThat(ClusterDashboard.parse("10.231.7.1:8266")).contains(URI.create("http://10.231.7.1:8266"));
    assertThat(ClusterDashboard.parse("http://127.0.0.1:8265\n")).contains(URI.create("http://127.0.0.1:8265"));
    assertThat(ClusterDashboard.parse("")).isEmpty();
    assertThat(ClusterDashboard.parse("no port")).isEmpty();
    assertThat(ClusterDashboard.parse("a:1\nb:2")).isEmpty();
  }

  @Test
  void registered_readsTheAnswerAndPassesTheGcsAddressAndOnlyRaysVariables() throws IOException {
    // the script echoes the address it was given as the host, and fails if a driver secret reached it
    Path py = python("[ -z \"$RAVEL_OTLP_HEADERS\" ] || exit 3\n[ \"$RAY_X\" = 1 ] || exit 4\n"
        + "case \"$3\" in 127.0.0.1:6379) printf '10.0.0.9:8266' ;; *) exit 5 ;; esac");
    Optional<URI> u = ClusterDashboard.registered(py, "127.0.0.1:6379",
        Map.of("RAVEL_OTLP_HEADERS", "authorization=secret", "RAY_X", "1", "PATH", "/usr/bin:/bin"),
        Duration.ofSeconds(30));
    assertThat(u).contains(URI.create("http://10.0.0.9:8266"));
  }

  @Test
  void registered_failingOrSilentOrMissing_isEmpty() throws IOException {
    assertThat(ClusterDashboard.registered(python("exit 1"), "127.0.0.1:1", Map.of(), Duration.ofSeconds(30)))
        .isEmpty();
    assertThat(ClusterDashboard.registered(python("true"), "127.0.0.1:1", Map.of(), Duration.ofSeconds(30)))
        .isEmpty();
    assertThat(ClusterDashboard.registered(dir.resolve("none"), "127.0.0.1:1", Map.of(), Duration.ofSeconds(30)))
        .isEmpty();
  }

  @Test
  void registered_answeringTooLate_isEmptyAndTheChildIsStopped() throws IOException {
    Path py = python("exec sleep 600");
    assertThat(ClusterDashboard.registered(py, "127.0.0.1:1", Map.of("PATH", "/usr/bin:/bin"),
        Duration.ofMillis(500))).isEmpty();
  }

  @Test
  void find_theOverrideWins() {
    assertThat(ClusterDashboard.find("10.0.0.1:6379", Map.of(RayVersions.DASHBOARD_ENV, "http://h:9000"),
        dir.resolve("no-venv"))).isEqualTo(URI.create("http://h:9000"));
    assertThat(ClusterDashboard.find("10.0.0.1:6379", Map.of(), dir.resolve("no-venv")))
        .isEqualTo(URI.create("http://10.0.0.1:8265"));
  }
}
