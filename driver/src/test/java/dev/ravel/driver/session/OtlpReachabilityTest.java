package dev.ravel.driver.session;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.otlp.OtlpSettings;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class OtlpReachabilityTest {
  @Test
  void check_listeningEndpointPasses() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      OtlpSettings otlp = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + s.getLocalPort()));
      assertThatCode(() -> OtlpReachability.check(otlp, 1000)).doesNotThrowAnyException();
    }
  }

  @Test
  void check_closedEndpointFailsNamingTheEndpointAndTheVariable() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      port = s.getLocalPort();
    }
    OtlpSettings otlp = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + port));
    assertThatThrownBy(() -> OtlpReachability.check(otlp, 1000))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("http://127.0.0.1:" + port)
        .hasMessageContaining("OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT");
  }
}
