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
 * One real Ray head on loopback shared by the integration-test classes that only need "a session and actors"
 * on a head with the plain test environment ({@link TestEnv#clean()}), instead of a head of their own each.
 *
 * <p>Failsafe runs each class in a JVM of its own, so the head is owned by the Maven build that forks them:
 * its supervisor ({@code head-supervisor.sh}) stops the head's whole process group when that Maven process is
 * gone (told from a recycled PID by its start time). The first class to ask starts it and records its address
 * in {@code target/shared-heads/}; later classes, under a file lock, reuse it while its owner, its
 * {@code ray start} process (same PID and start time) and its GCS port are all still there, else start a new
 * one. Run outside Maven (an IDE), the head is owned by the test JVM and lives as long as it does.
 *
 * <p>Each class connects its own driver, so each is a Ray job of its own: its actors end with its driver. A
 * class that changes the head's environment (an inherited OTLP endpoint, say) or its lifetime keeps its own.
 */
public final class SharedRayHead {
  private SharedRayHead() {}

  /**
   * The plain test environment ({@link TestEnv#clean()}) pointed at the shared head of the Ray this JVM runs
   * on, started if needed: {@code RAY_ADDRESS} and the head's dashboard ({@code RAVEL_RAY_DASHBOARD}, where the
   * driver reads the cluster's Ray version).
   */
  public static Map<String, String> env() {
    Map<String, String> env = new HashMap<>(TestEnv.clean());
    Properties head = head();
    env.put("RAY_ADDRESS", head.getProperty("address"));
    env.put(RayVersions.DASHBOARD_ENV, head.getProperty("dashboard"));
    return env;
  }

  private static synchronized Properties head() {
    String version = System.getenv().getOrDefault(RayHome.VERSION_ENV, RayHome.DEFAULT_RAY_VERSION);
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
        LocalRayHead head = start(dir, owner);
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
          p.store(out, "the shared Ray head of the integration tests (SharedRayHead)");
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

  private static LocalRayHead start(Path dir, ProcessHandle owner) {
    Map<String, String> env = TestEnv.clean();
    // the environment a DriverSession gives a head it starts itself, from the plain test environment
    HeadEnvironment headEnv = HeadEnvironment.of(TelemetryConfig.builder().build(), env);
    return LocalRayHead.builder(RayHome.locate(env))
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
