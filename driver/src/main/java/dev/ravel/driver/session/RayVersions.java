package dev.ravel.driver.session;

import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.jobs.JobsClient;
import dev.ravel.driver.jobs.JobsException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.security.CodeSource;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Java driver must run the same Ray release as the cluster it joins (a mismatch fails inside
 * {@code Ray.init()} with an unhelpful error): this tells the driver's release (from the jar its Ray
 * runtime was loaded from) and the cluster's (from its dashboard), and fails at start, naming both, when
 * they differ.
 */
public final class RayVersions {
  private static final Logger LOG = LoggerFactory.getLogger(RayVersions.class);
  /** A class of Ray's runtime (not of its API), so the jar found is the one that talks to the cluster. */
  private static final String RUNTIME_CLASS = "io.ray.runtime.RayNativeRuntime";
  /** The dashboard port Ray uses unless told otherwise. */
  static final int DEFAULT_DASHBOARD_PORT = 8265;
  /** Overrides the dashboard the cluster's version is read from, for a cluster reached by its GCS address. */
  public static final String DASHBOARD_ENV = "RAVEL_RAY_DASHBOARD";

  private RayVersions() {}

  /** The jar this JVM's Ray runtime comes from, if Ray's runtime is on the classpath. */
  public static Optional<Path> runtimeJar() {
    try {
      Class<?> c = Class.forName(RUNTIME_CLASS, false, RayVersions.class.getClassLoader());
      CodeSource src = c.getProtectionDomain().getCodeSource();
      return src == null || src.getLocation() == null ? Optional.empty() : Optional.of(Path.of(src.getLocation().toURI()));
    } catch (ClassNotFoundException | URISyntaxException | SecurityException | IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /** The Ray release of this JVM's Ray runtime, if it can be told (see {@link RayHome#versionOfJar}). */
  public static Optional<String> driverVersion() {
    return runtimeJar().flatMap(RayHome::versionOfJar);
  }

  /**
   * The dashboard to ask for the version of the cluster at {@code address} (a GCS {@code host:port}):
   * {@code RAVEL_RAY_DASHBOARD} if set, else the same host on Ray's default dashboard port.
   */
  public static URI dashboardOf(String address, String override) {
    if (override != null && !override.isBlank()) {
      return URI.create(override.trim());
    }
    String host = address.contains(":") ? address.substring(0, address.lastIndexOf(':')) : address;
    return URI.create("http://" + host + ":" + DEFAULT_DASHBOARD_PORT);
  }

  /** The cluster's Ray release as its dashboard reports it; empty (and a warning) when it cannot be read. */
  static Optional<String> clusterVersion(URI dashboard) {
    try {
      JobsClient c = JobsClient.builder().baseUrl(dashboard).connectTimeout(Duration.ofSeconds(3))
          .requestTimeout(Duration.ofSeconds(5)).build();
      String v = c.rayVersion();
      return v == null || v.isBlank() ? Optional.empty() : Optional.of(v);
    } catch (JobsException | IllegalArgumentException e) {
      LOG.warn("could not read the cluster's Ray version from {} ({}); set {} to its dashboard to check it",
          dashboard, e.getMessage(), DASHBOARD_ENV);
      return Optional.empty();
    }
  }

  /**
   * Fails when the driver and the cluster run different Ray releases; passes when either is unknown.
   *
   * @throws IllegalStateException one line naming both releases and the fix
   */
  static void requireSame(Optional<String> driver, Optional<String> cluster, String address) {
    if (driver.isEmpty() || cluster.isEmpty() || driver.get().equals(cluster.get())) {
      return;
    }
    throw new IllegalStateException("the Ray cluster at " + address + " runs Ray " + cluster.get()
        + " but this driver runs Ray " + driver.get() + " (" + runtimeJar().map(Path::toString).orElse("?")
        + "): set " + RayHome.JAR_ENV + " to the cluster's ray/jars/ray_dist.jar, or "
        + RayHome.VERSION_ENV + "=" + cluster.get() + " to use that Ray for the driver");
  }

  /**
   * Checks the driver against the cluster at {@code address}, whose dashboard is {@code dashboard}.
   *
   * @throws IllegalStateException when the releases differ
   */
  public static void check(String address, URI dashboard) {
    Optional<String> driver = driverVersion();
    if (driver.isEmpty()) {
      LOG.warn("cannot tell this driver's Ray release (Ray runtime from {}); not checked against the cluster",
          runtimeJar().map(Path::toString).orElse("nowhere"));
      return;
    }
    requireSame(driver, clusterVersion(dashboard), address);
  }
}
