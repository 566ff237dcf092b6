package dev.ravel.driver.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;

final class RayVersionsTest {
  @Test
  void requireSame_differentReleasesFailNamingBothAndTheFix() {
    assertThatThrownBy(() -> RayVersions.requireSame(Optional.of("2.39.0"), Optional.of("2.60.0"), "10.0.0.5:6379"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("10.0.0.5:6379 runs Ray 2.60.0")
        .hasMessageContaining("this driver runs Ray 2.39.0")
        .hasMessageContaining("RAVEL_RAY_JAR")
        .hasMessageContaining("RAVEL_RAY_VERSION=2.60.0")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
  }

  @Test
  void requireSame_sameOrUnknownPasses() {
    assertThatCode(() -> RayVersions.requireSame(Optional.of("2.60.0"), Optional.of("2.60.0"), "a:1"))
        .doesNotThrowAnyException();
    assertThatCode(() -> RayVersions.requireSame(Optional.empty(), Optional.of("2.60.0"), "a:1"))
        .doesNotThrowAnyException();
    assertThatCode(() -> RayVersions.requireSame(Optional.of("2.60.0"), Optional.empty(), "a:1"))
        .doesNotThrowAnyException();
  }

  @Test
  void dashboardOf_sameHostOnRaysDefaultPortUnlessOverridden() {
    assertThat(RayVersions.dashboardOf("127.0.0.1:6379", null)).isEqualTo(URI.create("http://127.0.0.1:8265"));
    assertThat(RayVersions.dashboardOf("127.0.0.1:6379", " ")).isEqualTo(URI.create("http://127.0.0.1:8265"));
    assertThat(RayVersions.dashboardOf("127.0.0.1:6379", "http://127.0.0.1:9999"))
        .isEqualTo(URI.create("http://127.0.0.1:9999"));
  }

  @Test
  void clusterVersion_readFromTheDashboard() throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/api/version", ex -> {
      byte[] body = "{\"version\":\"4\",\"ray_version\":\"2.60.0\",\"ray_commit\":\"x\",\"session_name\":\"s\"}"
          .getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Content-Type", "application/json");
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    server.start();
    try {
      URI url = URI.create("http://127.0.0.1:" + server.getAddress().getPort());

      assertThat(RayVersions.clusterVersion(url)).contains("2.60.0");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void clusterVersion_unreachableDashboardIsUnknownNotAFailure() throws IOException {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }

    assertThat(RayVersions.clusterVersion(URI.create("http://127.0.0.1:" + port))).isEmpty();
  }

  @Test
  void driverVersion_withoutRaysRuntimeOnTheClasspathIsUnknown() {
    // unit tests compile against ray-api only: no Ray runtime, so nothing to tell
    assertThat(RayVersions.runtimeJar()).isEmpty();
    assertThat(RayVersions.driverVersion()).isEmpty();
  }
}
