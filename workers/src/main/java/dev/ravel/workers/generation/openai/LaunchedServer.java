package dev.ravel.workers.generation.openai;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.process.ProcessIdentity;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.workers.serve.ServeCommand;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An inference server a generation worker started as its child process on a loopback port: {@code ravel
 * serve} (which also exits by itself when the worker's process is gone, so a killed worker leaves no
 * orphan), or any command from a template. Its output goes to a log file. {@link #close()} stops it by its
 * own PID (SIGTERM, then SIGKILL after 10 s), its descendants too; a JVM shutdown hook does the same if
 * the worker exits without closing it.
 */
final class LaunchedServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LaunchedServer.class);
  static final String SERVE_MAIN = "dev.ravel.workers.serve.ServeMain";
  private static final Pattern LISTENING = Pattern.compile("ravel serve: listening on (http://127\\.0\\.0\\.1:\\d+)");
  private static final Duration STOP_GRACE = Duration.ofSeconds(10);
  private static final int LOG_TAIL = 20;

  private final Process process;
  private final String url;
  private final Path log;
  private final Path spanCounts;
  private final Thread hook;
  private boolean closed;

  /**
   * The server's descendants when it became ready (vLLM's engine core, say), recorded by identity: once the server
   * itself is dead they are no longer its descendants, and are stopped from this list.
   */
  private final List<ProcessIdentity> family;

  private LaunchedServer(Process process, String url, Path log, Path spanCounts) {
    this.family = ProcessIdentity.descendants(process.toHandle());
    this.process = process;
    this.url = url;
    this.log = log;
    this.spanCounts = spanCounts;
    this.hook = new Thread(this::stop, "ravel-stop-inference-server-" + process.pid());
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** The server's base URL. */
  String url() {
    return url;
  }

  long pid() {
    return process.pid();
  }

  /** Whether the server's process is still running. */
  boolean alive() {
    return process.isAlive();
  }

  Path log() {
    return log;
  }

  /**
   * The server's span counts as it wrote them when its telemetry stopped ({@code ravel serve --span-counts}),
   * once {@link #close()} has stopped it; empty for a server from a template (its spans, if any, are its own
   * to count) or one that could not write them (killed): the run's total then leaves its spans out, and a
   * warning says so.
   */
  synchronized Optional<ExportStats> spanCounts() {
    if (!closed || spanCounts == null) {
      return Optional.empty();
    }
    try {
      @SuppressWarnings("unchecked")
      Map<String, Object> json = new ObjectMapper().readValue(spanCounts.toFile(), Map.class);
      return Optional.of(ExportStats.fromJson(json));
    } catch (IOException | IllegalArgumentException e) {
      LOG.warn("inference server pid {} left no span counts in {} ({}): its spans are in no count", process.pid(),
          spanCounts, e.getMessage());
      return Optional.empty();
    }
  }

  /** How a launched server's exchange log is named in the run folder: {@code inference-server-exchanges-*.jsonl}. */
  public static final String EXCHANGES_PREFIX = "inference-server-exchanges-";
  public static final String EXCHANGES_SUFFIX = ".jsonl";

  /**
   * Starts {@code ravel serve} with this JVM's java and Ravel's workers classpath on a free loopback port,
   * with the initial weights in {@code weights}, and waits until it listens and answers {@code /health}.
   */
  static LaunchedServer ravel(String modelName, Path weights, int kvTokenBudget, int maxRunningRequests,
      int heapMb, Path logDir, Duration timeout, Consumer<String> healthCheck) {
    return ravel(modelName, weights, kvTokenBudget, maxRunningRequests, heapMb, logDir, timeout, healthCheck, false);
  }

  /**
   * As above; with {@code recordExchanges}, the server appends every HTTP exchange to
   * {@code <logDir>/inference-server-exchanges-<n>.jsonl} ({@code ravel serve --record-exchanges}).
   */
  static LaunchedServer ravel(String modelName, Path weights, int kvTokenBudget, int maxRunningRequests,
      int heapMb, Path logDir, Duration timeout, Consumer<String> healthCheck, boolean recordExchanges) {
    List<String> cmd = new ArrayList<>(List.of(javaBinary(), "-Xmx" + heapMb + "m", "-XX:+UseSerialGC",
        "-cp", workersClasspath(), SERVE_MAIN, "--host", "127.0.0.1", "--port", "0", "--model-name", modelName,
        "--weights", weights.toString(), "--kv-token-budget", String.valueOf(kvTokenBudget),
        "--max-running-requests", String.valueOf(maxRunningRequests),
        "--exit-with-parent", String.valueOf(ProcessHandle.current().pid())));
    cmd.add("--span-counts-dir");
    cmd.add(logDir.toString());
    if (recordExchanges) {
      try {
        Files.createDirectories(logDir);
        cmd.add("--record-exchanges");
        cmd.add(Files.createTempFile(logDir, EXCHANGES_PREFIX, EXCHANGES_SUFFIX).toString());
      } catch (java.io.IOException e) {
        throw new IllegalStateException("cannot create an exchange log in " + logDir + ": " + e.getMessage(), e);
      }
    }
    return start(cmd, null, true, logDir, timeout, healthCheck);
  }

  /**
   * Starts {@code template} (split on whitespace, no shell; {@code {port}}, {@code {host}} and
   * {@code {model}} replaced) on a free loopback port and waits until it answers {@code /health}.
   */
  static LaunchedServer fromTemplate(String template, String modelName, Path logDir, Duration timeout,
      Consumer<String> healthCheck) {
    int port = freePort();
    List<String> cmd = new ArrayList<>();
    for (String part : template.trim().split("\\s+")) {
      cmd.add(part.replace("{port}", String.valueOf(port)).replace("{host}", "127.0.0.1")
          .replace("{model}", modelName));
    }
    return start(cmd, "http://127.0.0.1:" + port, false, logDir, timeout, healthCheck);
  }

  private static LaunchedServer start(List<String> cmd, String knownUrl, boolean countsSpans, Path logDir,
      Duration timeout, Consumer<String> healthCheck) {
    Path log;
    Process p;
    try {
      Files.createDirectories(logDir);
      log = Files.createTempFile(logDir, "inference-server-", ".log");
      p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start inference server '" + String.join(" ", cmd) + "': "
          + e.getMessage(), e);
    }
    Path named = logDir.resolve("inference-server-" + p.pid() + ".log");
    try {
      Files.move(log, named);
      log = named;
    } catch (IOException e) {
      // the output keeps going to the temporary name; it is still in the run folder
    }
    LaunchedServer server = null;
    try {
      long deadline = System.nanoTime() + timeout.toNanos();
      String url = knownUrl;
      while (true) {
        if (url == null) {
          url = listeningUrl(log);
        }
        if (url != null) {
          try {
            healthCheck.accept(url);
            server = new LaunchedServer(p, url, log, countsSpans ? ServeCommand.spanCountsFile(logDir, p.pid()) : null);
            LOG.info("inference server pid {} ready at {} (log {})", p.pid(), url, log);
            return server;
          } catch (IllegalStateException notYet) {
            // not answering yet
          }
        }
        if (!p.isAlive()) {
          throw new IllegalStateException("inference server '" + String.join(" ", cmd) + "' exited with code "
              + p.exitValue() + " before answering /health; last lines of " + log + ":\n" + tail(log));
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("inference server pid " + p.pid() + (knownUrl == null ? "" : " at "
              + knownUrl) + " did not answer /health within " + timeout.toSeconds() + " s (generation.launch_timeout_s:"
              + " raise it for a server slower to start); last lines of " + log + ":\n" + tail(log));
        }
        Thread.sleep(100);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting an inference server", e);
    } finally {
      if (server == null) {
        stopProcess(p);
      }
    }
  }

  private static String listeningUrl(Path log) {
    try {
      Matcher m = LISTENING.matcher(Files.readString(log, StandardCharsets.UTF_8));
      return m.find() ? m.group(1) : null;
    } catch (IOException e) {
      return null;
    }
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - LOG_TAIL), lines.size()));
    } catch (IOException e) {
      return "(log unreadable: " + e.getMessage() + ")";
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free loopback port", e);
    }
  }

  private static String javaBinary() {
    return ProcessHandle.current().info().command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
  }

  /**
   * The classpath of Ravel's workers: the jar this class came from and the {@code worker-lib} folder beside
   * it (as the driver gives Ray), or this JVM's classpath when running from classes (tests).
   */
  static String workersClasspath() {
    try {
      Path self = Path.of(LaunchedServer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isRegularFile(self)) {
        Path lib = self.getParent().resolve("worker-lib");
        return Files.isDirectory(lib) ? self + java.io.File.pathSeparator + lib + "/*" : self.toString();
      }
    } catch (URISyntaxException | RuntimeException e) {
      LOG.debug("cannot locate the workers jar: {}", e.toString());
    }
    return System.getProperty("java.class.path");
  }

  /** Stops the server by its PID (and its descendants). Idempotent. */
  @Override
  public void close() {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs (or ran) stop() itself
    }
    stop();
  }

  private synchronized void stop() {
    if (closed) {
      return;
    }
    closed = true;
    stopProcess(process);
    family.forEach(ProcessIdentity::kill); // each only while its PID still names the process recorded
  }

  private static void stopProcess(Process p) {
    List<ProcessIdentity> descendants = ProcessIdentity.descendants(p.toHandle());
    p.destroy();
    try {
      if (!p.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn("inference server pid {} ignored SIGTERM for {} s; killing it", p.pid(), STOP_GRACE.toSeconds());
        p.destroyForcibly();
        p.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
    }
    descendants.forEach(ProcessIdentity::kill); // each only while its PID still names the process recorded
  }
}
