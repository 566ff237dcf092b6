package dev.ravel.driver.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where the project's Ray ({@code ray[default]==2.39.0} in a project-local virtualenv, made by
 * {@code scripts/setup-ray.sh}) and Ravel's own jars are.
 */
public final class RayHome {
  /** The Python Ray version that must match the io.ray Java jars. */
  public static final String RAY_VERSION = "2.39.0";

  private final Path venv;
  private final Path ravelHome;

  private RayHome(Path venv, Path ravelHome) {
    this.venv = venv;
    this.ravelHome = ravelHome;
  }

  /**
   * Locates Ray: {@code RAVEL_RAY_VENV} if set, else {@code ~/.cache/ravel/ray-2.39.0-py311}; and Ravel's
   * checkout: system property {@code ravel.home}, else {@code RAVEL_HOME}, else the working directory.
   */
  public static RayHome locate(Map<String, String> env) {
    String v = env.get("RAVEL_RAY_VENV");
    Path venv;
    if (v != null && !v.isEmpty()) {
      venv = Path.of(v);
    } else {
      String cache = env.getOrDefault("XDG_CACHE_HOME", "");
      Path base = cache.isEmpty() ? Path.of(System.getProperty("user.home"), ".cache") : Path.of(cache);
      venv = base.resolve("ravel").resolve("ray-" + RAY_VERSION + "-py311");
    }
    String h = System.getProperty("ravel.home", env.getOrDefault("RAVEL_HOME", ""));
    Path home = h.isEmpty() ? Path.of("").toAbsolutePath() : Path.of(h).toAbsolutePath().normalize();
    return new RayHome(venv, home);
  }

  /** The {@code ray} command of the virtualenv; fails with the fix if it is not installed. */
  public Path rayCommand() {
    Path ray = venv.resolve("bin").resolve("ray");
    if (!Files.isExecutable(ray)) {
      throw new IllegalStateException("Ray " + RAY_VERSION + " is not installed at " + venv
          + ": run scripts/setup-ray.sh (or set RAVEL_RAY_VENV)");
    }
    return ray;
  }

  public Path venv() {
    return venv;
  }

  public Path ravelHome() {
    return ravelHome;
  }

  /**
   * What the workers need beyond Ray itself, for {@code ray.job.code-search-path}: the workers jar and
   * the folder of its dependencies.
   */
  public List<Path> workerCodeSearchPath() {
    Path target = ravelHome.resolve("workers").resolve("target");
    Path lib = target.resolve("worker-lib");
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(target, "workers-*.jar")) {
      for (Path p : ds) {
        if (!p.getFileName().toString().endsWith("-tests.jar")) {
          out.add(p.toAbsolutePath());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("workers are not built under " + target + ": run 'mvn -DskipTests package'", e);
    }
    if (out.isEmpty() || !Files.isDirectory(lib)) {
      throw new IllegalStateException("workers are not built under " + target + ": run 'mvn -DskipTests package'");
    }
    out.add(lib.toAbsolutePath());
    return out;
  }
}
