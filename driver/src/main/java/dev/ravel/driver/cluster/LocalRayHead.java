package dev.ravel.driver.cluster;

import dev.ravel.telemetry.process.ProcessIdentity;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A single-node Ray head on loopback only (GCS, raylet, dashboard on 127.0.0.1), started as
 * {@code ray start --head --block} in a process group of its own, under a small supervisor
 * ({@code head-supervisor.sh}) that lives exactly as long as the head and stops the head's whole process
 * group, by its id, when the driver that started it is gone: whatever ended the driver, SIGKILL and the OOM
 * killer included, which no code in the driver can catch. The supervisor watches the driver's PID together
 * with its start time (so a recycled PID does not count) every half second. The parent-death signal
 * ({@code PR_SET_PDEATHSIG}) was not used: Java cannot set it, and Linux sends it when the forking thread
 * ends, not the driver process, so it would fire early or never.
 *
 * <p>{@link #close()} tells the supervisor to stop the head (SIGTERM to the whole group, then SIGKILL after
 * 4 s); anything that still remains is then stopped by its own PID.
 *
 * <p>Each head has a temp folder of its own ({@link #tempDir()}, {@code ray start --temp-dir}), not Ray's shared
 * {@code /tmp/ray}: Ray records there the head started last ({@code ray_current_cluster}) and gives that address to
 * every job's entrypoint, so with one shared folder a job submitted to this head would join whichever head on the
 * machine started after it.
 *
 * <p>Every port of the head is explicit and free in 20000-29999, picked under a registry of the ports given to this
 * machine's heads in the last minutes (a file under a lock), so two heads starting at once never take the same one;
 * its workers bind ports the OS gives them (never a fixed range that another head may hand out in the same order).
 */
public final class LocalRayHead implements AutoCloseable {
  /** Ray's switch for token authentication ({@code token} or {@code disabled}). */
  public static final String AUTH_MODE_ENV = "RAY_AUTH_MODE";

  private static final Logger LOG = LoggerFactory.getLogger(LocalRayHead.class);
  /**
   * The range of the head's own ports: clear of Ray's default worker ports (10002-19999, a user's head started
   * with {@code ray start}) and of the OS's ephemeral ports (32768 and up, this head's workers).
   */
  private static final int PORT_MIN = 20000;
  private static final int PORT_MAX = 29999;

  private static final Pattern RAY_PID = Pattern.compile("ravel-head-supervisor: ray pid (\\d+)");
  private static final String SUPERVISOR = "dev/ravel/driver/cluster/head-supervisor.sh";

  /** The supervisor; the head ({@code ray start}) is its child. */
  private final Process process;
  private volatile long rayPid = -1;
  private final int gcsPort;
  private final int dashboardPort;
  private final Path log;
  private final Path tempDir;

  private LocalRayHead(Process process, int gcsPort, int dashboardPort, Path log, Path tempDir) {
    this.process = process;
    this.gcsPort = gcsPort;
    this.dashboardPort = dashboardPort;
    this.log = log;
    this.tempDir = tempDir;
  }

  public static Builder builder(RayHome home) {
    return new Builder(home);
  }

  /** {@code 127.0.0.1:<gcs port>}, for {@code ray.address} and {@code RAY_ADDRESS}. */
  public String address() {
    return "127.0.0.1:" + gcsPort;
  }

  public int gcsPort() {
    return gcsPort;
  }

  /** The dashboard (Jobs API) base URL. */
  public URI dashboardUrl() {
    return URI.create("http://127.0.0.1:" + dashboardPort);
  }

  /** The PID of {@code ray start}, which is also the id of the head's process group. */
  public long pid() {
    return rayPid > 0 ? rayPid : process.pid();
  }

  public Path logFile() {
    return log;
  }

  /**
   * The head's own Ray temp folder ({@code ray start --temp-dir}): its sessions, their logs and sockets, and its
   * {@code ray_current_cluster}. {@code ravel-ray-<gcs port>} in the JVM's temp folder, kept when the head stops
   * (as Ray keeps {@code /tmp/ray}'s sessions); a later head on the same port adds a session of its own.
   */
  public Path tempDir() {
    return tempDir;
  }

  /**
   * The Ray temp folder of a head whose GCS listens on {@code gcsPort} ({@link #tempDir()}): short, as Ray's socket
   * paths below it must fit a Unix socket address (107 bytes).
   */
  public static Path tempDirOf(int gcsPort) {
    return Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath().resolve("ravel-ray-" + gcsPort);
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /**
   * Stops the head (SIGTERM to its own PID, then its remaining descendants by PID); bounded. Each process is
   * signalled only while its PID still names the process recorded ({@link ProcessIdentity}).
   */
  @Override
  public void close() {
    if (!process.isAlive()) {
      return;
    }
    List<ProcessIdentity> descendants = ProcessIdentity.descendants(process.toHandle());
    process.destroy();
    if (!awaitExit(process.toHandle(), 30)) {
      LOG.warn("ray head {} did not stop within 30 s; killing it", process.pid());
      process.destroyForcibly();
      awaitExit(process.toHandle(), 10);
    }
    descendants.forEach(ProcessIdentity::terminate);
    for (ProcessIdentity p : descendants) {
      if (!p.awaitExit(10_000)) {
        p.kill();
      }
    }
    NativeLibraryCopy.removeSessionCopy(log); // 40 MB the workers loaded; the session's logs stay
  }

  /** The supervisor script, from this jar. */
  static String supervisorScript() {
    try (InputStream in = LocalRayHead.class.getClassLoader().getResourceAsStream(SUPERVISOR)) {
      if (in == null) {
        throw new IllegalStateException("classpath resource " + SUPERVISOR + " is missing from Ravel's driver jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + SUPERVISOR, e);
    }
  }

  /**
   * This process's start time, field 22 of {@code /proc/self/stat} (clock ticks since boot), which with the
   * PID names this process uniquely; empty where there is no {@code /proc} (the supervisor then goes by
   * the PID alone).
   */
  static String ownStartTime() {
    return ProcessIdentity.of(ProcessHandle.current().pid()).map(ProcessIdentity::startTime).orElse("");
  }

  private static long rayPid(Path log) {
    try {
      Matcher m = RAY_PID.matcher(Files.readString(log, StandardCharsets.ISO_8859_1));
      return m.find() ? Long.parseLong(m.group(1)) : -1;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  static int freePort(int min, int max) {
    for (int attempt = 0; attempt < 200; attempt++) {
      int port = min + (int) (Math.random() * (max - min));
      try (ServerSocket s = new ServerSocket()) {
        s.setReuseAddress(false);
        s.bind(new InetSocketAddress("127.0.0.1", port));
        return port;
      } catch (IOException busy) {
        // try another
      }
    }
    throw new IllegalStateException("no free port between " + min + " and " + max);
  }

  private static boolean listening(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Waits up to {@code seconds} for {@code p} to exit, without throwing (also when interrupted). */
  private static boolean awaitExit(ProcessHandle p, int seconds) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (p.isAlive() && System.nanoTime() < deadline) {
      java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
    return !p.isAlive();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Options of a local head. */
  public static final class Builder {
    private final RayHome home;
    private int gcsPort;
    private int dashboardPort;
    private boolean dashboard = true;
    private int numCpus = 0;
    private final Map<String, String> env = new LinkedHashMap<>();
    private Map<String, String> base;
    private Path logDir;
    private Duration startTimeout = Duration.ofSeconds(90);
    private ProcessHandle owner = ProcessHandle.current();

    private Builder(RayHome home) {
      this.home = Objects.requireNonNull(home);
    }

    /** The GCS port (default: a free one in 20000-29999, clear of Ray's default worker ports and the OS's). */
    public Builder gcsPort(int port) {
      this.gcsPort = port;
      return this;
    }

    public Builder dashboardPort(int port) {
      this.dashboardPort = port;
      return this;
    }

    /** Whether to start the dashboard (the Jobs API); default true. */
    public Builder dashboard(boolean on) {
      this.dashboard = on;
      return this;
    }

    /** Logical CPUs of the node (default: Ray's choice, the machine's cores). */
    public Builder numCpus(int n) {
      this.numCpus = n;
      return this;
    }

    /**
     * An environment variable for the head's processes, as if exported in the shell that ran
     * {@code ray start} (workers inherit it unless the worker-environment policy masks it).
     */
    public Builder env(String name, String value) {
      env.put(name, value);
      return this;
    }

    /**
     * The whole environment the head starts with, instead of this process's own (built on purpose, for
     * example a {@code HeadEnvironment} without the driver's telemetry settings); {@link #env} adds to it.
     */
    public Builder environment(Map<String, String> environment) {
      this.base = Map.copyOf(environment);
      return this;
    }

    public Builder logDir(Path dir) {
      this.logDir = dir;
      return this;
    }

    public Builder startTimeout(Duration timeout) {
      this.startTimeout = timeout;
      return this;
    }

    /**
     * The process whose end stops the head (default: this one). A head owned by a longer-lived process (a
     * build that runs many test JVMs, say) outlives this JVM, and is stopped by its supervisor when the owner
     * is gone, the owner told from a later process with its recycled PID by its start time.
     */
    public Builder ownedBy(ProcessHandle owner) {
      this.owner = Objects.requireNonNull(owner, "owner");
      return this;
    }

    /** Starts the head and waits until the GCS (and the dashboard) answer. */
    public LocalRayHead start() {
      // every port explicit, so that two heads on one machine (a user's and a test's) do not collide; the ones not
      // given are picked under the machine's port registry, so that two heads starting at once never pick the same
      java.util.Set<Integer> given = new java.util.HashSet<>();
      if (gcsPort > 0) {
        given.add(gcsPort);
      }
      if (dashboardPort > 0) {
        given.add(dashboardPort);
      }
      List<String> others = List.of("--ray-client-server-port", "--node-manager-port", "--object-manager-port",
          "--metrics-export-port", "--runtime-env-agent-port", "--dashboard-agent-listen-port",
          "--dashboard-agent-grpc-port");
      java.util.Iterator<Integer> ports = PortRegistry.machine(PORT_MIN, PORT_MAX)
          .reserve(others.size() + 2 - given.size(), given).iterator();
      int gcs = gcsPort > 0 ? gcsPort : ports.next();
      int dash = dashboardPort > 0 ? dashboardPort : ports.next();
      List<String> cmd = new ArrayList<>(List.of(home.rayCommand().toString(), "start", "--head", "--block",
          "--node-ip-address=127.0.0.1", "--port=" + gcs, "--disable-usage-stats",
          "--include-dashboard=" + dashboard, "--dashboard-host=127.0.0.1", "--dashboard-port=" + dash));
      others.forEach(option -> cmd.add(option + "=" + ports.next()));
      // the workers' ports (the dashboard agent's and the drivers' too) chosen by the OS, never a fixed range: two
      // heads on one machine given the same range hand out the same ports in the same order, and a worker or agent
      // that finds its port taken fails its check and takes the raylet down with it (seen with Ray 2.39)
      cmd.add("--min-worker-port=0");
      cmd.add("--max-worker-port=0");
      if (numCpus > 0) {
        cmd.add("--num-cpus=" + numCpus);
      }
      Path rayTemp = tempDirOf(gcs);
      cmd.add("--temp-dir=" + rayTemp);
      Path dir = logDir != null ? logDir : Path.of(System.getProperty("java.io.tmpdir"));
      Path log;
      try {
        Files.createDirectories(dir);
        log = dir.resolve("ray-head-" + gcs + ".log");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      List<String> supervised = new ArrayList<>(List.of("bash", "-c", supervisorScript(), "ravel-head-supervisor",
          String.valueOf(owner.pid()), ProcessIdentity.of(owner.pid()).map(ProcessIdentity::startTime).orElse(""), "--"));
      supervised.addAll(cmd);
      ProcessBuilder pb = new ProcessBuilder(supervised).redirectErrorStream(true).redirectOutput(log.toFile());
      if (base != null) {
        pb.environment().clear();
        pb.environment().putAll(base);
      }
      pb.environment().put("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0");
      pb.environment().putAll(env);
      Process p;
      try {
        p = pb.start();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot run " + cmd.get(0), e);
      }
      LocalRayHead head = new LocalRayHead(p, gcs, dash, log, rayTemp);
      try {
        waitReady(head, dashboard);
      } catch (RuntimeException e) {
        head.close();
        throw e;
      }
      LOG.info("Ray head started at {} (pid {}, dashboard {}, log {})", head.address(), head.pid(), head.dashboardUrl(),
          log);
      return head;
    }

    private void waitReady(LocalRayHead head, boolean withDashboard) {
      long deadline = System.nanoTime() + startTimeout.toNanos();
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
      boolean started = false;
      while (System.nanoTime() < deadline) {
        if (!head.process.isAlive()) {
          throw new IllegalStateException("ray start exited with " + head.process.exitValue() + "; log: "
              + head.log + "\n" + tail(head.log));
        }
        if (head.rayPid <= 0) {
          head.rayPid = rayPid(head.log);
        }
        if (!started) {
          started = logContains(head.log, "Ray runtime started") && listening(head.gcsPort);
        }
        if (started) {
          if (!withDashboard) {
            return;
          }
          try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(head.dashboardUrl().resolve("/api/version"))
                .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 200) {
              return;
            }
            if (r.statusCode() == 401) {
              throw new IllegalStateException("the Ray head's dashboard " + head.dashboardUrl() + " asks for a token"
                  + " (Ray token auth: " + AUTH_MODE_ENV + "=token or ~/.ray/auth_token), which Ravel does not send;"
                  + " leave " + AUTH_MODE_ENV + " unset (Ravel then starts its loopback-only head without token auth) or set it"
                  + " to disabled");
            }
          } catch (IOException e) {
            // not up yet
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
          }
        }
        sleep(250);
      }
      throw new IllegalStateException("Ray head did not become ready within " + startTimeout.toSeconds()
          + " s; log: " + head.log + "\n" + tail(head.log));
    }

    private static boolean logContains(Path log, String marker) {
      try {
        return Files.readString(log, StandardCharsets.UTF_8).contains(marker);
      } catch (IOException e) {
        return false;
      }
    }

    private static String tail(Path log) {
      try {
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
      } catch (IOException e) {
        return "";
      }
    }
  }
}
