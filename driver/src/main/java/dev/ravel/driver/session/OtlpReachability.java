package dev.ravel.driver.session;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.otlp.OtlpSettings;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;

/**
 * Telemetry fails loudly at set-up: before a run starts, the OTLP endpoint it will export to must accept
 * a connection. Otherwise every span of the run would be lost, with only warnings in the logs.
 */
final class OtlpReachability {
  private OtlpReachability() {}

  static void check(OtlpSettings otlp, int timeoutMs) {
    URI e = otlp.endpoint();
    int port = e.getPort() > 0 ? e.getPort() : ("https".equalsIgnoreCase(e.getScheme()) ? 443 : 80);
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(e.getHost(), port), timeoutMs);
    } catch (IOException ex) {
      throw new ConfigException(otlp.endpointConfigured() ? "OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT" : "telemetry.exporter",
          "the OTLP endpoint " + e + " is not reachable (" + ex.getMessage() + "); start the backend, fix the endpoint,"
              + " or use telemetry.exporter=file");
    }
  }
}
