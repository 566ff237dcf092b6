package dev.ravel.it.support;

import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.session.RayVersions;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.env.HeadEnvironment;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * A head of the other Ray (the one this test JVM does not run: {@code ravel.ray.other.venv}), for a test that
 * checks that the driver refuses it. It is that Ray's shared head ({@link SharedRayHead}'s, owned by the Maven
 * build), recorded the way SharedRayHead records its own: where the other Failsafe execution already started it,
 * it is reused; else it is started here, with the environment the other execution's SharedRayHead would give it,
 * and that execution's classes use it as their shared head later in the same build. One head of each Ray per
 * build, instead of one more for each refusal.
 *
 * <p>The lock file, the record's keys and the checks before reuse are SharedRayHead's (same folder, same names,
 * same rules: the same owner, its {@code ray start} with the same start time, its GCS accepting connections).
 */
public final class OtherRayHead {
  private OtherRayHead() {}

  /**
   * The environment variables that point a driver at the other Ray's head: {@code RAY_ADDRESS} and the head's
   * dashboard ({@code RAVEL_RAY_DASHBOARD}, where the driver reads the cluster's Ray version).
   *
   * @param other the other Ray's installation
   * @param version its release, as {@code RAVEL_RAY_VERSION} names it in the Failsafe execution that runs on it
   */
  public static Map<String, String> env(RayHome other, String version) {
    Properties head = head(other, version);
    Map<String, String> env = new HashMap<>();
    env.put("RAY_ADDRESS", head.getProperty("address"));
    env.put(RayVersions.DASHBOARD_ENV, head.getProperty("dashboard"));
    return env;
  }

  private static synchronized Properties head(RayHome other, String version) {
    Path dir = Path.of(System.getProperty("ravel.shared.heads", "target/shared-heads")).toAbsolutePath();
    ProcessHandle owner = mavenAncestor().orElse(ProcessHandle.current());
    String ownerStart = Procs.startTime(owner.pid()).orElse("");
    try {
      Files.createDirectories(dir);
      Path lockFile = dir.resolve("ray-" + version + ".lock");
      Path stateFile = dir.resolve("ray-" + version + ".properties");
      try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
          FileLock lock = ch.lock()) {
        Optional<Properties> reused = reusable(stateFile, owner.pid(), ownerStart);
        if (reused.isPresent()) {
          return reused.get();
        }
        LocalRayHead head = start(other, version, dir, owner);
        Properties p = new Properties();
        p.setProperty("address", head.address());
        p.setProperty("dashboard", head.dashboardUrl().toString());
        p.setProperty("gcs.port", String.valueOf(head.gcsPort()));
        p.setProperty("ray.pid", String.valueOf(head.pid()));
        p.setProperty("ray.start", Procs.startTime(head.pid()).orElse(""));
        p.setProperty("owner.pid", String.valueOf(owner.pid()));
        p.setProperty("owner.start", ownerStart);
        p.setProperty("log", head.logFile().toString());
        try (OutputStream out = Files.newOutputStream(stateFile)) {
          p.store(out, "the shared Ray head of the integration tests (SharedRayHead; started by OtherRayHead)");
        }
        return p;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("shared Ray head in " + dir, e);
    }
  }

  /** The recorded head, if it still runs for the same owner and its GCS accepts connections. */
  private static Optional<Properties> reusable(Path stateFile, long ownerPid, String ownerStart) throws IOException {
    if (!Files.isRegularFile(stateFile)) {
      return Optional.empty();
    }
    Properties p = new Properties();
    try (InputStream in = Files.newInputStream(stateFile)) {
      p.load(in);
    }
    long rayPid = Long.parseLong(p.getProperty("ray.pid", "-1"));
    boolean sameOwner = String.valueOf(ownerPid).equals(p.getProperty("owner.pid"))
        && !ownerStart.isEmpty() && ownerStart.equals(p.getProperty("owner.start"));
    boolean rayRunning = rayPid > 0 && Procs.startTime(rayPid).map(t -> t.equals(p.getProperty("ray.start")))
        .orElse(false);
    if (!sameOwner || !rayRunning) {
      return Optional.empty();
    }
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", Integer.parseInt(p.getProperty("gcs.port"))), 5000);
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
    return Optional.of(p);
  }

  /**
   * Starts the head as SharedRayHead would in a test JVM of the other Ray: the plain test environment with that
   * Ray's installation and release in it (jobs submitted there run {@code bin/ravel} on that Ray).
   */
  private static LocalRayHead start(RayHome other, String version, Path dir, ProcessHandle owner) {
    Map<String, String> env = new HashMap<>(TestEnv.clean());
    env.put(RayHome.VENV_ENV, other.venv().toString());
    env.put(RayHome.VERSION_ENV, version);
    HeadEnvironment headEnv = HeadEnvironment.of(TelemetryConfig.builder().build(), env);
    return LocalRayHead.builder(other)
        .environment(headEnv.variables())
        .env(LocalRayHead.AUTH_MODE_ENV, "disabled")
        .logDir(dir.resolve("logs"))
        .ownedBy(owner)
        .start();
  }

  /** The Maven process that forked this test JVM (Failsafe's forks run under a shell below it). */
  private static Optional<ProcessHandle> mavenAncestor() {
    Optional<ProcessHandle> p = ProcessHandle.current().parent();
    for (int depth = 0; depth < 8 && p.isPresent(); depth++) {
      ProcessHandle h = p.get();
      try {
        String cmd = Procs.cmdline(h.pid()).orElse("");
        if (cmd.contains("org.codehaus.plexus.classworlds.launcher.Launcher")) {
          return Optional.of(h);
        }
      } catch (IOException e) {
        return Optional.empty();
      }
      p = h.parent();
    }
    return Optional.empty();
  }
}
