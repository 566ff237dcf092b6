package dev.ravel.driver.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the project's Ray is (a project-local virtualenv of {@code ray[default]==<version>}, made by
 * {@code scripts/setup-ray.sh}), which Ray jar the driver runs on, and where Ravel's own jars are.
 *
 * <p>The Ray version is a setting ({@code RAVEL_RAY_VERSION}, default {@link #DEFAULT_RAY_VERSION}). The
 * driver and the Java workers run on that Ray's own {@code ray/jars/ray_dist.jar} (or the jar named by
 * {@code RAVEL_RAY_JAR}, for a cluster of another version); the {@code io.ray} 2.39.0 jars from Maven
 * Central are used only to compile.
 */
public final class RayHome {
  /** The newest Ray the project's tests pass on; what {@code scripts/setup-ray.sh} installs by default. */
  public static final String DEFAULT_RAY_VERSION = "2.60.0";
  /** The setting that picks the Ray version. */
  public static final String VERSION_ENV = "RAVEL_RAY_VERSION";
  /** The setting that points at another Ray jar (a cluster's own {@code ray_dist.jar}). */
  public static final String JAR_ENV = "RAVEL_RAY_JAR";
  /** The setting that points at another virtualenv. */
  public static final String VENV_ENV = "RAVEL_RAY_VENV";

  private static final Pattern RELEASE = Pattern.compile("[0-9]+\\.[0-9]+\\.[0-9]+([a-z0-9.+-]*)?");
  private static final Pattern PY_VERSION = Pattern.compile("(?m)^version\\s*=\\s*[\"']([^\"']+)[\"']");

  private final String version;
  private final Path venv;
  private final Path jar;
  private final Path ravelHome;

  private RayHome(String version, Path venv, Path jar, Path ravelHome) {
    this.version = version;
    this.venv = venv;
    this.jar = jar;
    this.ravelHome = ravelHome;
  }

  /**
   * Locates Ray: version {@code RAVEL_RAY_VERSION} (default {@link #DEFAULT_RAY_VERSION}); its virtualenv
   * {@code RAVEL_RAY_VENV} if set, else {@code ~/.cache/ravel/ray-<version>-py311}; its jar
   * {@code RAVEL_RAY_JAR} if set, else the virtualenv's; and Ravel's checkout: system property
   * {@code ravel.home}, else {@code RAVEL_HOME}, else the working directory.
   *
   * @throws IllegalArgumentException naming {@code RAVEL_RAY_VERSION} when it is not a release number
   */
  public static RayHome locate(Map<String, String> env) {
    String version = env.getOrDefault(VERSION_ENV, "").trim();
    if (version.isEmpty()) {
      version = DEFAULT_RAY_VERSION;
    } else if (!RELEASE.matcher(version).matches()) {
      throw new IllegalArgumentException(VERSION_ENV + ": expected a Ray release such as " + DEFAULT_RAY_VERSION
          + ", got '" + version + "'");
    }
    String v = env.get(VENV_ENV);
    Path venv;
    if (v != null && !v.isEmpty()) {
      venv = Path.of(v);
    } else {
      String cache = env.getOrDefault("XDG_CACHE_HOME", "");
      Path base = cache.isEmpty() ? Path.of(System.getProperty("user.home"), ".cache") : Path.of(cache);
      venv = base.resolve("ravel").resolve("ray-" + version + "-py311");
    }
    String j = env.getOrDefault(JAR_ENV, "");
    Path jar = j.isEmpty() ? null : Path.of(j).toAbsolutePath();
    String h = System.getProperty("ravel.home", env.getOrDefault("RAVEL_HOME", ""));
    Path home = h.isEmpty() ? Path.of("").toAbsolutePath() : Path.of(h).toAbsolutePath().normalize();
    return new RayHome(version, venv, jar, home);
  }

  /** {@code RAVEL_RAY_JAR}, when set. */
  public Optional<Path> jarOverride() {
    return Optional.ofNullable(jar);
  }

  /** The Ray version asked for ({@code RAVEL_RAY_VERSION} or the default). */
  public String version() {
    return version;
  }

  /**
   * The Ray jar the driver runs on: {@code RAVEL_RAY_JAR}, else the virtualenv's {@code ray/jars/ray_dist.jar}.
   *
   * @throws IllegalStateException with the fix when there is none
   */
  public Path rayJar() {
    if (jar != null) {
      if (!Files.isRegularFile(jar)) {
        throw new IllegalStateException(JAR_ENV + ": no such file " + jar);
      }
      return jar;
    }
    Path lib = venv.resolve("lib");
    try (DirectoryStream<Path> pythons = Files.newDirectoryStream(lib, "python3*")) {
      for (Path py : pythons) {
        Path dist = py.resolve("site-packages").resolve("ray").resolve("jars").resolve("ray_dist.jar");
        if (Files.isRegularFile(dist)) {
          return dist;
        }
      }
    } catch (IOException e) {
      // reported below
    }
    throw new IllegalStateException("Ray " + version + " is not installed at " + venv
        + ": run scripts/setup-ray.sh (or set " + VENV_ENV + ")");
  }

  /**
   * The Ray release of a Ray jar, when it can be told: a wheel's {@code ray/jars/ray_dist.jar} from the
   * wheel's {@code ray/_version.py}, Maven's {@code ray-runtime-X.jar} or {@code ray-api-X.jar} from its name.
   */
  public static Optional<String> versionOfJar(Path jar) {
    String name = jar.getFileName().toString();
    for (String prefix : List.of("ray-runtime-", "ray-api-")) {
      if (name.startsWith(prefix) && name.endsWith(".jar")) {
        return Optional.of(name.substring(prefix.length(), name.length() - ".jar".length()));
      }
    }
    Path parent = jar.toAbsolutePath().getParent();
    Path py = parent == null || parent.getParent() == null ? null : parent.getParent().resolve("_version.py");
    if (py != null && Files.isRegularFile(py)) {
      try {
        Matcher m = PY_VERSION.matcher(Files.readString(py));
        if (m.find()) {
          return Optional.of(m.group(1));
        }
      } catch (IOException e) {
        return Optional.empty();
      }
    }
    return Optional.empty();
  }

  /** The {@code ray} command of the virtualenv; fails with the fix if it is not installed. */
  public Path rayCommand() {
    Path ray = venv.resolve("bin").resolve("ray");
    if (!Files.isExecutable(ray)) {
      throw new IllegalStateException("Ray " + version + " is not installed at " + venv
          + ": run scripts/setup-ray.sh (or set " + VENV_ENV + ")");
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
    // Ravel's Python workers: their package's folder, so Python actors import the checkout's code
    Path python = ravelHome.resolve("workers").resolve("src").resolve("main").resolve("python");
    if (Files.isDirectory(python.resolve("ravel_workers"))) {
      out.add(python.toAbsolutePath());
    }
    return out;
  }
}
