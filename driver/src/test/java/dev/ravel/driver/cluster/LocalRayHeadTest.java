package dev.ravel.driver.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.DisabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * The head's logic without Ray: {@link RayHome} points at a virtualenv whose {@code bin/ray} is a shell
 * script that records its arguments, environment and PID, prints Ray's start-up line and stays up as
 * {@code sleep} (one variant with a {@code sleep} child of its own). The test itself listens on the GCS
 * port (and serves the dashboard when one is wanted). Every process the tests start is stopped by its own
 * PID.
 */
@Timeout(180) // a hang guard only: each start waits on a condition, at most its start timeout
@DisabledOnOs(OS.WINDOWS)
final class LocalRayHeadTest {
  private static final int HEAD_PORT_MIN = 20000;
  private static final int HEAD_PORT_MAX = 29999;

  @TempDir
  Path tmp;

  private Path venv;
  private Path record;
  private ServerSocket gcs;
  private HttpServer dashboard;
  private final List<LocalRayHead> heads = new ArrayList<>();
  private final Instant testStart = Instant.now();

  @BeforeEach
  void listenOnTheGcsPort() throws IOException {
    venv = tmp.resolve("venv");
    record = Files.createDirectories(tmp.resolve("record"));
    gcs = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
  }

  @AfterEach
  void stopEverything() throws IOException {
    heads.forEach(LocalRayHead::close);
    for (String name : List.of("pid", "child")) {
      recordedPid(name).flatMap(ProcessHandle::of)
          .filter(p -> p.info().startInstant().map(t -> !t.isBefore(testStart.minusSeconds(1))).orElse(false))
          .ifPresent(ProcessHandle::destroyForcibly);
    }
    gcs.close();
    if (dashboard != null) {
      dashboard.stop(0);
    }
  }

  @Test
  void start_runsRayStartHeadBlockingOnLoopbackWithTheGivenPorts() throws IOException {
    fakeRay(READY);

    start(builder().dashboardPort(23456).dashboard(false));

    List<String> args = args();
    assertThat(args.subList(0, 3)).containsExactly("start", "--head", "--block");
    assertThat(args).contains("--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1",
        "--port=" + gcs.getLocalPort(), "--dashboard-port=23456", "--include-dashboard=false",
        "--disable-usage-stats");
    assertThat(args).noneMatch(a -> a.startsWith("--num-cpus"));
  }

  @Test
  void start_givesEveryPortAFreeOneOfItsOwnAndTheWorkersPortsToTheOs() throws IOException {
    fakeRay(READY);

    start(builder().dashboard(false));

    Map<String, Integer> ports = new HashMap<>();
    for (String a : args()) {
      if (a.matches("--[a-z-]*port=\\d+")) {
        ports.put(a.substring(2, a.indexOf('=')), Integer.parseInt(a.substring(a.indexOf('=') + 1)));
      }
    }
    int minWorker = ports.remove("min-worker-port");
    int maxWorker = ports.remove("max-worker-port");
    assertThat(ports).containsOnlyKeys("port", "dashboard-port", "ray-client-server-port", "node-manager-port",
        "object-manager-port", "metrics-export-port", "runtime-env-agent-port", "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port");
    assertThat(ports.get("port")).isEqualTo(gcs.getLocalPort());
    ports.remove("port");
    assertThat(ports.values()).doesNotHaveDuplicates().allSatisfy(p -> assertThat(p)
        .isBetween(HEAD_PORT_MIN, HEAD_PORT_MAX).isNotEqualTo(gcs.getLocalPort()));
    // 0 and 0: each worker binds a port the OS picks, so two heads on one machine never hand out the same one
    assertThat(minWorker).isZero();
    assertThat(maxWorker).isZero();
  }

  @Test
  void start_numCpusIsPassedWhenSet() throws IOException {
    fakeRay(READY);

    start(builder().dashboard(false).numCpus(3));

    assertThat(args()).contains("--num-cpus=3");
  }

  @Test
  void start_rayGetsTheBuilderEnvironment() throws IOException {
    fakeRay(READY);

    start(builder().dashboard(false).env("RAVEL_TEST_VALUE", "a b=c").env("RAVEL_TEST_OTHER", "2"));

    List<String> env = Files.readAllLines(record.resolve("env"), StandardCharsets.UTF_8);
    assertThat(env).contains("RAVEL_TEST_VALUE=a b=c", "RAVEL_TEST_OTHER=2", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0");
  }

  @Test
  void start_environmentReplacesThisProcesssOwn() throws IOException {
    fakeRay(READY);
    Map<String, String> base = new java.util.HashMap<>();
    base.put("PATH", System.getenv("PATH"));
    base.put("RAVEL_TEST_BASE", "kept");

    start(builder().dashboard(false).environment(base).env("RAVEL_TEST_ADDED", "1"));

    List<String> env = Files.readAllLines(record.resolve("env"), StandardCharsets.UTF_8);
    assertThat(env).contains("RAVEL_TEST_BASE=kept", "RAVEL_TEST_ADDED=1", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0");
    // HOME is in this JVM's environment but not in the one given: the head does not inherit it
    assertThat(env).noneMatch(l -> l.startsWith("HOME="));
  }

  @Test
  void start_reportsTheHeadsAddressDashboardUrlAndPid() throws IOException {
    fakeRay(READY);

    LocalRayHead head = start(builder().dashboardPort(23457).dashboard(false));

    int port = gcs.getLocalPort();
    assertThat(head.address()).isEqualTo("127.0.0.1:" + port);
    assertThat(head.gcsPort()).isEqualTo(port);
    assertThat(head.dashboardUrl()).isEqualTo(URI.create("http://127.0.0.1:23457"));
    assertThat(head.pid()).isEqualTo(recordedPid("pid").orElseThrow());
    assertThat(head.isAlive()).isTrue();
  }

  @Test
  void start_writesRaysOutputToALogNamedAfterTheGcsPortCreatingTheLogDir() throws IOException {
    fakeRay(READY);
    Path logDir = tmp.resolve("logs").resolve("nested");

    LocalRayHead head = start(builder().dashboard(false).logDir(logDir));

    assertThat(head.logFile()).isEqualTo(logDir.resolve("ray-head-" + gcs.getLocalPort() + ".log"));
    assertThat(Files.readString(head.logFile())).contains("Ray runtime started");
  }

  @Test
  void start_withDashboardWaitsUntilItAnswersItsVersion() throws IOException {
    fakeRay(READY);
    AtomicInteger calls = new AtomicInteger();
    int port = serveDashboard(() -> calls.incrementAndGet() < 3 ? 503 : 200);

    LocalRayHead head = start(builder().dashboardPort(port).dashboard(true));

    assertThat(calls.get()).isEqualTo(3);
    assertThat(head.isAlive()).isTrue();
    assertThat(args()).contains("--include-dashboard=true", "--dashboard-port=" + port);
  }

  @Test
  void start_dashboardThatNeverAnswersTimesOutAndStopsTheHead() throws IOException {
    fakeRay(READY_WITH_CHILD);
    int port = serveDashboard(() -> 503);
    // long enough for the stand-in to have started and printed its line on a loaded machine (it takes ms)
    LocalRayHead.Builder builder = builder().dashboardPort(port).dashboard(true).startTimeout(Duration.ofSeconds(5));

    assertThatThrownBy(builder::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("did not become ready within 5 s")
        .hasMessageContaining("ray-head-" + gcs.getLocalPort() + ".log")
        .hasMessageContaining("Ray runtime started");
    assertThat(alive("pid")).as("head process").isFalse();
    assertThat(alive("child")).as("its child").isFalse();
  }

  @Test
  void start_rayThatExitsFailsWithItsExitCodeAndTheLogTail() throws IOException {
    fakeRay("echo 'ConnectionError: port 6379 already in use'\nexit 3\n");

    assertThatThrownBy(() -> builder().dashboard(false).start())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("ray start exited with 3")
        .hasMessageContaining("ray-head-" + gcs.getLocalPort() + ".log")
        .hasMessageContaining("port 6379 already in use");
  }

  @Test
  void start_withoutRayInstalledFailsTellingHowToInstallIt() {
    RayHome home = RayHome.locate(Map.of("RAVEL_RAY_VENV", tmp.resolve("no-venv").toString()));

    assertThatThrownBy(() -> LocalRayHead.builder(home).gcsPort(gcs.getLocalPort()).dashboard(false).start())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("scripts/setup-ray.sh");
  }

  @Test
  void close_stopsTheHeadAndTheProcessesItStarted() throws IOException {
    fakeRay(READY_WITH_CHILD);
    LocalRayHead head = start(builder().dashboard(false));
    assertThat(alive("child")).isTrue();

    head.close();

    assertThat(head.isAlive()).isFalse();
    assertThat(alive("pid")).as("head process").isFalse();
    assertThat(alive("child")).as("its child").isFalse();
  }

  @Test
  void start_ownedByAnotherProcessStopsWhenThatProcessIsGone() throws Exception {
    fakeRay(READY_WITH_CHILD);
    Process owner = new ProcessBuilder("sleep", "300").start();
    try {
      LocalRayHead head = start(builder().dashboard(false).ownedBy(owner.toHandle()));
      assertThat(alive("child")).isTrue();

      owner.destroyForcibly(); // our own child, not yet reaped: its PID cannot have been reused
      owner.waitFor();

      // the supervisor polls its owner every 0.5 s: a generous bound for a loaded machine
      long deadline = System.nanoTime() + Duration.ofSeconds(45).toNanos();
      while ((head.isAlive() || alive("child")) && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      assertThat(head.isAlive()).as("supervisor").isFalse();
      assertThat(alive("pid")).as("head process").isFalse();
      assertThat(alive("child")).as("its child").isFalse();
    } finally {
      owner.destroyForcibly();
    }
  }

  @Test
  void close_againAfterTheHeadStoppedDoesNothing() throws IOException {
    fakeRay(READY);
    LocalRayHead head = start(builder().dashboard(false));
    head.close();

    head.close();

    assertThat(head.isAlive()).isFalse();
  }

  @Test
  void freePort_neverReturnsAPortInUse() {
    int busy = gcs.getLocalPort();

    assertThatThrownBy(() -> LocalRayHead.freePort(busy, busy + 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("no free port between " + busy + " and " + (busy + 1));
  }

  @Test
  void freePort_returnsAFreePortOfTheRange() throws IOException {
    int free;
    try (ServerSocket s = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      free = s.getLocalPort();
    }

    assertThat(LocalRayHead.freePort(free, free + 1)).isEqualTo(free);
  }

  // ---------------------------------------------------------------- helpers

  /** The script body of a head that comes up: records its arguments, environment and PID, prints Ray's line. */
  private static final String READY = """
      printf '%s\\n' "$@" > "$RECORD/args"
      env > "$RECORD/env"
      echo $$ > "$RECORD/pid"
      echo "Ray runtime started."
      exec sleep 120
      """;

  /** As {@link #READY}, with a child process of its own (as Ray's raylet and GCS are), that it waits for. */
  private static final String READY_WITH_CHILD = """
      echo $$ > "$RECORD/pid"
      sleep 120 &
      echo $! > "$RECORD/child"
      echo "Ray runtime started."
      wait
      """;

  /** Installs {@code bin/ray} running {@code body} (with {@code RECORD} set to the record folder). */
  private void fakeRay(String body) throws IOException {
    Path ray = Files.createDirectories(venv.resolve("bin")).resolve("ray");
    Files.writeString(ray, "#!/bin/sh\nRECORD='" + record + "'\n" + body, StandardCharsets.UTF_8);
    Files.setPosixFilePermissions(ray, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  private LocalRayHead.Builder builder() {
    return LocalRayHead.builder(RayHome.locate(Map.of("RAVEL_RAY_VENV", venv.toString())))
        .gcsPort(gcs.getLocalPort())
        .logDir(tmp.resolve("logs"))
        .startTimeout(Duration.ofSeconds(20));
  }

  private LocalRayHead start(LocalRayHead.Builder builder) {
    LocalRayHead head = builder.start();
    heads.add(head);
    return head;
  }

  /** Serves {@code GET /api/version} on an ephemeral loopback port with the status {@code status} gives. */
  private int serveDashboard(java.util.function.IntSupplier status) throws IOException {
    dashboard = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    dashboard.createContext("/api/version", ex -> {
      byte[] body = "{\"ray_version\":\"2.39.0\"}".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(status.getAsInt(), body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    dashboard.start();
    return dashboard.getAddress().getPort();
  }

  private List<String> args() throws IOException {
    return Files.readAllLines(record.resolve("args"), StandardCharsets.UTF_8);
  }

  private Optional<Long> recordedPid(String name) {
    try {
      return Optional.of(Long.parseLong(Files.readString(record.resolve(name)).trim()));
    } catch (IOException | NumberFormatException e) {
      return Optional.empty();
    }
  }

  /**
   * Whether the recorded process still runs. A zombie has ended (as LocalRayHead and ProcessIdentity count it): a
   * killed process whose parent died waits for init to reap it, which on a loaded machine takes a moment, and
   * ProcessHandle.isAlive would still call it alive.
   */
  private boolean alive(String name) {
    long pid = recordedPid(name).orElseThrow(() -> new AssertionError("no " + name + " recorded"));
    return dev.ravel.telemetry.process.ProcessIdentity.of(pid).isPresent();
  }
}
