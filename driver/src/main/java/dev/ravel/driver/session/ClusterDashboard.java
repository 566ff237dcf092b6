package dev.ravel.driver.session;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the dashboard of a cluster Ravel did not start is (its version and its list of nodes are read there):
 * {@code RAVEL_RAY_DASHBOARD} when set, else the address the dashboard registered in the cluster's GCS (read with
 * Ray's own {@code GcsClient}, by the Python of the driver's Ray virtualenv), else the GCS's host on Ray's default
 * port.
 */
final class ClusterDashboard {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterDashboard.class);
  /** How long reading the GCS may take (a Python start and an import of Ray, then one call). */
  static final Duration GCS_READ_TIMEOUT = Duration.ofSeconds(30);
  /**
   * Reads the dashboard's address from the GCS at {@code argv[1]}: the key Ray's dashboard writes at start
   * ({@code ray_constants.DASHBOARD_ADDRESS} in the {@code dashboard} namespace).
   */
  static final String READ_SCRIPT = String.join("\n",
      "import sys",
      "from ray._raylet import GcsClient",
      "v = GcsClient(address=sys.argv[1]).internal_kv_get(b'dashboard', namespace=b'dashboard', timeout=10)",
      "sys.stdout.write(v.decode() if v else '')");

  private ClusterDashboard() {}

  /** The dashboard of the cluster whose GCS is at {@code address}; {@code venv} is the driver's Ray virtualenv. */
  static URI find(String address, Map<String, String> env, Path venv) {
    String override = env.get(RayVersions.DASHBOARD_ENV);
    if (override != null && !override.isBlank()) {
      return RayVersions.dashboardOf(address, override);
    }
    Optional<URI> registered = registered(venv.resolve("bin").resolve("python"), address, env, GCS_READ_TIMEOUT);
    if (registered.isPresent()) {
      LOG.info("the cluster's dashboard, as registered in its GCS: {}", registered.get());
      return registered.get();
    }
    URI guess = RayVersions.dashboardOf(address, null);
    LOG.warn("the cluster at {} registered no dashboard that could be read; trying {} (set {} to choose)", address,
        guess, RayVersions.DASHBOARD_ENV);
    return guess;
  }

  /**
   * The dashboard address registered in the GCS at {@code address}, read by {@code python}; empty when it cannot be
   * read within {@code timeout} (no such Python, no GCS there, no dashboard).
   */
  static Optional<URI> registered(Path python, String address, Map<String, String> env, Duration timeout) {
    if (!Files.isExecutable(python)) {
      return Optional.empty();
    }
    ProcessBuilder pb = new ProcessBuilder(python.toString(), "-c", READ_SCRIPT, address)
        .redirectError(ProcessBuilder.Redirect.DISCARD); // Ray's import may warn there; stdout holds the answer
    pb.environment().clear(); // only what Ray's client needs: no secret of the driver's reaches it
    env.forEach((k, v) -> {
      if (k.equals("PATH") || k.equals("HOME") || k.startsWith("RAY_")) {
        pb.environment().put(k, v);
      }
    });
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      return Optional.empty();
    }
    try {
      p.getOutputStream().close();
      if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly(); // this driver's own child, by its handle
        p.waitFor(5, TimeUnit.SECONDS);
        return Optional.empty();
      }
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      if (p.exitValue() != 0) {
        LOG.debug("reading the dashboard from the GCS at {} failed (exit {})", address, p.exitValue());
        return Optional.empty();
      }
      return parse(out);
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      return Optional.empty();
    }
  }

  /** {@code host:port} (how Ray registers it) or a URL, as the dashboard's URL; empty for anything else. */
  static Optional<URI> parse(String registered) {
    String s = registered == null ? "" : registered.trim();
    if (s.isEmpty() || s.contains("\n")) {
      return Optional.empty();
    }
    try {
      URI u = URI.create(s.contains("://") ? s : "http://" + s);
      return u.getHost() == null || u.getPort() < 0 ? Optional.empty() : Optional.of(u);
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
