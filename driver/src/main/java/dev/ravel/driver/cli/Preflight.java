package dev.ravel.driver.cli;

import dev.ravel.driver.config.Keys;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.otlp.OtlpSettings;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The checks a run makes before it starts or contacts Ray, each failing with a {@link ConfigException} that
 * names the key or variable: the runs folder can be written, and a Ray is listening at the address given.
 */
final class Preflight {
  /** How long the address check waits for a connection. */
  static final int CONNECT_TIMEOUT_MS = 3_000;

  private Preflight() {}

  /** {@code runsDir} exists (it is created if missing) and a file can be written in it. */
  static void writableRunsDir(Path runsDir, Map<String, String> env) {
    String variable = TelemetryConfig.ENV_PREFIX + "RUNS_DIR";
    String key = env.getOrDefault(variable, "").isEmpty() ? "telemetry.runs_dir" : variable;
    try {
      Files.createDirectories(runsDir);
      Path probe = Files.createTempFile(runsDir, ".ravel-write-check-", ".tmp");
      Files.delete(probe);
    } catch (IOException | SecurityException e) {
      throw new ConfigException(key, runsDir.toAbsolutePath() + " is not a folder this user can write ("
          + why(e) + ")");
    }
  }

  /**
   * The OTLP settings the run's telemetry would use, read now so that a bad {@code OTEL_*} value is reported
   * before anything starts (the metrics settings only matter when the exporter uses OTLP).
   */
  static void otlpSettings(TelemetryConfig telemetry, Map<String, String> env) {
    OtlpSettings s = OtlpSettings.inWorkerEnvironment(env) ? OtlpSettings.fromWorkerEnvironment(env)
        : OtlpSettings.resolve(env);
    if (telemetry.exporter().usesOtlp()) {
      s.metrics();
    }
  }

  /** What went wrong with a path, in words. */
  private static String why(Exception e) {
    if (e instanceof java.nio.file.FileAlreadyExistsException f) {
      return "a file is in the way: " + f.getFile();
    }
    if (e instanceof java.nio.file.AccessDeniedException a) {
      return "permission denied: " + a.getFile();
    }
    if (e instanceof java.nio.file.FileSystemException f) {
      return (f.getReason() == null ? "cannot write" : f.getReason()) + ": " + f.getFile();
    }
    return e.getMessage() == null ? "cannot write there" : e.getMessage();
  }

  /**
   * The Ray a run would join: {@code cluster.address} if set, else {@code RAY_ADDRESS} ({@code null} when
   * neither is: a local head). A {@code host:port} that nothing answers on within a few seconds is reported
   * naming the key and the address; other forms ({@code auto}, {@code ray://...}) are left to Ray.
   */
  static void reachableRay(String clusterAddress, Map<String, String> env) {
    String key = Keys.ADDRESS.dotted();
    String address = clusterAddress;
    if (address == null || address.isEmpty()) {
      key = "RAY_ADDRESS";
      address = env.getOrDefault("RAY_ADDRESS", "");
    }
    if (address.isEmpty() || address.equals("auto") || address.contains("://")) {
      return;
    }
    int colon = address.lastIndexOf(':');
    if (colon <= 0 || colon == address.length() - 1) {
      throw new ConfigException(key, "'" + address + "' is not host:port (for example 127.0.0.1:6379)");
    }
    String host = address.substring(0, colon);
    int port;
    try {
      port = Integer.parseInt(address.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new ConfigException(key, "'" + address + "' has no port number after the ':'");
    }
    if (port < 1 || port > 65535) {
      throw new ConfigException(key, "'" + address + "': port " + port + " is outside 1-65535");
    }
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), CONNECT_TIMEOUT_MS);
    } catch (IOException e) {
      throw new ConfigException(key, "no Ray at " + address + " (" + (e.getMessage() == null
          ? e.getClass().getSimpleName() : e.getMessage()) + "); start one there with 'ray start --head', or"
          + " leave " + Keys.ADDRESS + " and RAY_ADDRESS empty for a local head");
    }
  }
}
