package dev.ravel.it.env;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.Procs;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.spans.StepMetricNames;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A user's run with the standard OpenTelemetry variables in the driver's environment: an OTLP endpoint over TLS
 * (a private CA) with an auth header, a metrics endpoint of its own ({@code OTEL_EXPORTER_OTLP_METRICS_ENDPOINT}),
 * a service name and resource attributes. The local head that Ravel starts inherits none of them: no process of
 * it (GCS, raylet, dashboard, agents, the Java workers it launches) has the header or the endpoint in its
 * environment, and the header is in no file of the run, no Ray log and no output, while export still arrives
 * over TLS with the header. {@code OTEL_SERVICE_NAME} and {@code OTEL_RESOURCE_ATTRIBUTES} name every process of
 * the run (driver and workers), and metrics go to their own endpoint, not to the traces endpoint. One run serves
 * both tests ({@link OtelStandardVariablesIT} has {@code OTEL_METRICS_EXPORTER}).
 */
final class HeadEnvironmentIT {
  private static final Pattern HEAD_PID = Pattern.compile("Ray head started at 127\\.0\\.0\\.1:(\\d+) \\(pid (\\d+),");
  private static final char[] STORE_PASSWORD = "ravel-it".toCharArray();
  private static final String RUN_ID = "it-head-env";

  @TempDir
  static Path tmp;

  static String token;
  static OtlpHttpSink sink;
  static OtlpHttpSink metrics;
  static Instant started;
  /** What the run printed, how it ended, and what was read from /proc while it ran. */
  static String stdout;
  static String stderr;
  static int exitCode;
  static int gcsPort;
  /** The processes below the driver (not the driver itself), and the head's, read while the run went on. */
  static List<Proc> belowDriver;
  static List<Proc> seen;

  @BeforeAll
  static void run() throws Exception {
    token = "ravel-it-" + HexFormat.of().formatHex(java.security.SecureRandom.getInstanceStrong().generateSeed(12));
    Path ca = certificate(tmp);
    SSLContext tls = tls(tmp.resolve("server.p12"));
    sink = OtlpHttpSink.tls(tls);
    metrics = OtlpHttpSink.tls(tls);
    Map<String, String> env = new HashMap<>(TestEnv.clean());
    env.put("OTEL_EXPORTER_OTLP_ENDPOINT", sink.baseUrl());
    env.put("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
    env.put("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20" + token);
    env.put("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.toString());
    env.put("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", metrics.baseUrl() + "/v1/metrics");
    env.put("OTEL_SERVICE_NAME", "grpo-it");
    env.put("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=it,team=rl%20infra");
    Path runs = tmp.resolve("runs");
    started = Instant.now();
    Path out = tmp.resolve("out.txt");
    Path err = tmp.resolve("err.txt");
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    // The head's processes are read while the run goes on, from its step 3: two scans of /proc, well under a
    // second. The run must outlast them: 27 more steps of this example (about 0.4 CPU-seconds each), several
    // seconds however loaded the machine, since the scans slow down with the steps. One generation worker: it is
    // a Java worker of the head like the trainer and the reward, whose environments are read the same way.
    ProcessBuilder pb = new ProcessBuilder(home.resolve("bin/ravel").toString(), "run",
        home.resolve("examples/grpo-sync.yaml").toString(), "grpo.steps=30", "generation.workers=1",
        "telemetry.exporter=both", "telemetry.runs_dir=" + runs, "telemetry.run_id=" + RUN_ID)
        .redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    Process driver = pb.start();
    long headPid = -1;
    String headStart = "";
    try {
      Matcher m = RavelCommand.awaitOutput(out, driver, HEAD_PID, "step   3/", 240);
      gcsPort = Integer.parseInt(m.group(1));
      headPid = Long.parseLong(m.group(2));
      headStart = Procs.startTime(headPid).orElse("");
      // bin/ravel execs the driver's JVM: its PID is the command's
      belowDriver = descendantsOf(driver.pid()).stream().filter(p -> p.pid() != driver.pid()).toList();
      seen = descendantsOf(headPid);
      assertThat(driver.waitFor(300, TimeUnit.SECONDS)).as("the run ends").isTrue();
    } finally {
      if (driver.isAlive()) {
        driver.destroy();
        driver.waitFor(30, TimeUnit.SECONDS);
      }
      stopLeftover(headPid, headStart);
    }
    stdout = Files.readString(out, StandardCharsets.UTF_8);
    stderr = Files.readString(err, StandardCharsets.UTF_8);
    exitCode = driver.exitValue();
  }

  @AfterAll
  static void closeSinks() {
    if (sink != null) {
      sink.close();
    }
    if (metrics != null) {
      metrics.close();
    }
  }

  @Test
  void run_headInheritsNoEndpointNorHeaderAndExportStillArrivesOverTlsWithIt() throws Exception {
    String endpoint = sink.baseUrl();
    // no process bin/ravel started holds the header but the driver JVM that reads it: not the stderr filter, not
    // the head's supervisor, not the head
    assertThat(belowDriver).as("the stderr filter and the head run below the driver")
        .anyMatch(p -> p.cmdline().contains("awk"));
    for (Proc p : belowDriver) {
      assertThat(p.environ()).as("environment of %s, a descendant of the driver", p).doesNotContain(token);
    }
    assertThat(seen).extracting(Proc::cmdline).anyMatch(c -> c.contains("raylet"))
        .anyMatch(c -> c.contains("gcs_server"));
    assertThat(seen).as("processes of the head").anyMatch(Proc::isJavaWorker);
    for (Proc p : seen) {
      assertThat(p.environ()).as("environment of %s", p).doesNotContain(token);
      if (p.isJavaWorker()) {
        // Ravel's workers get their settings explicitly (RAVEL_OTLP_*, the header through a file); the
        // standard variables that would turn on a third-party engine's tracing are masked
        assertThat(p.variable("OTEL_EXPORTER_OTLP_ENDPOINT")).as("%s", p).isIn(Optional.empty(), Optional.of(""));
        assertThat(p.variable("OTEL_EXPORTER_OTLP_HEADERS")).as("%s", p).isIn(Optional.empty(), Optional.of(""));
        assertThat(p.variable("OTEL_EXPORTER_OTLP_CERTIFICATE")).as("%s", p).isIn(Optional.empty(), Optional.of(""));
      } else {
        assertThat(p.environ()).as("environment of %s", p).doesNotContain(endpoint)
            .doesNotContain("OTEL_EXPORTER_OTLP");
      }
    }
    assertThat(exitCode).as("stdout:\n%s\nstderr:\n%s", stdout, stderr).isZero();
    assertThat(stdout + stderr).doesNotContain(token)
        .contains("local Ray head environment: held back OTEL_EXPORTER_OTLP_CERTIFICATE, "
            + "OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, "
            + "OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME; passed none");

    assertThat(sink.spans()).isNotEmpty();
    assertThat(sink.authorizations()).isNotEmpty().allSatisfy(a -> assertThat(a).isEqualTo("Bearer " + token));
    assertThat(metrics.authorizations()).isNotEmpty().allSatisfy(a -> assertThat(a).isEqualTo("Bearer " + token));
    assertThat(sink.spans()).extracting(OtlpHttpSink.Received::role).contains("driver", "generation_worker");

    assertThat(filesContaining(tmp.resolve("runs"), token, Instant.EPOCH)).as("run folder").isEmpty();
    // the head's own log (`ray start`'s output, where the driver's JVM writes it): a scan of a file that is not
    // there would find nothing and pass, so it must exist and hold Ray's output first
    Path headLog = Path.of(System.getProperty("java.io.tmpdir"), "ray-head-" + gcsPort + ".log");
    assertThat(headLog).as("head log").isRegularFile();
    assertThat(Files.size(headLog)).as("head log %s", headLog).isPositive();
    assertThat(filesContaining(headLog, token, Instant.EPOCH)).as("head log").isEmpty();
    // the head's own Ray temp folder, its sessions' logs: there, and written by this run's head
    Path rayTemp = dev.ravel.driver.cluster.LocalRayHead.tempDirOf(gcsPort);
    assertThat(rayTemp.resolve("session_latest/logs/raylet.out")).as("Ray's session logs").isRegularFile();
    assertThat(filesContaining(rayTemp, token, started)).as("Ray's session logs").isEmpty();
  }

  @Test
  void run_namesEveryProcessAsTheVariablesSayAndSendsMetricsToTheirOwnEndpoint() throws Exception {
    assertThat(exitCode).as("stdout:\n%s\nstderr:\n%s", stdout, stderr).isZero();
    // Ray's own messages are not on the terminal: its native log lines and log4j's status lines go to the
    // driver's log file, which the run names at its end
    assertThat((stdout + stderr).lines())
        .noneMatch(l -> l.matches("^\\[\\d{4}-\\d\\d-\\d\\d [\\d:,]+ [DIWEF] \\d+ \\d+\\] .*"))
        .noneMatch(l -> l.contains("Starting configuration") || l.contains("Stopping configuration"));
    Matcher log = Pattern.compile("Ray's messages: (\\S+)").matcher(stdout);
    if (log.find()) {
      assertThat(Path.of(log.group(1))).isRegularFile();
      Files.deleteIfExists(Path.of(log.group(1)));
    }
    assertThat(sink.spans()).isNotEmpty().allSatisfy(s -> {
      assertThat(s.service()).isEqualTo("grpo-it");
      assertThat(s.resource()).containsEntry("deployment.environment.name", "it").containsEntry("team", "rl infra")
          .containsEntry("rl.run.id", RUN_ID);
    });
    assertThat(sink.spans()).extracting(OtlpHttpSink.Received::role).contains("driver", "generation_worker",
        "policy_trainer");
    assertThat(sink.metrics()).as("no metrics at the traces endpoint").isEmpty();

    assertThat(metrics.spans()).isEmpty();
    assertThat(metrics.metrics()).extracting(OtlpHttpSink.ReceivedMetric::name)
        .contains(StepMetricNames.REWARD_MEAN, StepMetricNames.KL, StepMetricNames.LOSS, StepMetricNames.DURATION);
    assertThat(metrics.metrics()).allSatisfy(m -> {
      assertThat(m.path()).isEqualTo("/v1/metrics");
      assertThat(m.resource()).containsEntry("service.name", "grpo-it").containsEntry("deployment.environment.name", "it");
    });
    assertThat(metrics.metrics()).extracting(m -> m.resource().get("rl.process.role")).contains("driver",
        "generation_worker");
  }

  /** After a failure: the head the driver started, if it outlived the driver, and its processes, by PID. */
  private static void stopLeftover(long headPid, String headStart) {
    Procs.same(headPid, headStart).ifPresent(h -> { // only while the PID still names the head it recorded
      h.descendants().forEach(ProcessHandle::destroyForcibly);
      h.destroyForcibly();
    });
  }

  /** A self-signed certificate for 127.0.0.1 (its own CA) in a PKCS#12 store; returns the PEM of the CA. */
  private static Path certificate(Path dir) throws IOException, InterruptedException {
    String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
    Path store = dir.resolve("server.p12");
    Path pem = dir.resolve("ca.pem");
    exec(keytool, "-genkeypair", "-alias", "otlp", "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
        "-dname", "CN=127.0.0.1", "-ext", "SAN=ip:127.0.0.1", "-keystore", store.toString(), "-storetype",
        "PKCS12", "-storepass", new String(STORE_PASSWORD), "-keypass", new String(STORE_PASSWORD));
    exec(keytool, "-exportcert", "-rfc", "-alias", "otlp", "-keystore", store.toString(), "-storepass",
        new String(STORE_PASSWORD), "-file", pem.toString());
    return pem;
  }

  private static void exec(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(String.join(" ", cmd) + "\n" + output).isZero();
  }

  private static SSLContext tls(Path store) throws Exception {
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(store)) {
      ks.load(in, STORE_PASSWORD);
    }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(ks, STORE_PASSWORD);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(kmf.getKeyManagers(), null, null);
    return ctx;
  }

  /** A process read from /proc. */
  private record Proc(long pid, String cmdline, String environ) {
    boolean isJavaWorker() {
      return cmdline.contains("java") && cmdline.contains("io.ray.runtime.runner.worker");
    }

    Optional<String> variable(String name) {
      for (String kv : environ.split("\n")) {
        if (kv.startsWith(name + "=")) {
          return Optional.of(kv.substring(name.length() + 1));
        }
      }
      return Optional.empty();
    }

    @Override
    public String toString() {
      return pid + " " + (cmdline.length() > 160 ? cmdline.substring(0, 160) + "..." : cmdline);
    }
  }

  /** {@code root} and every process below it, with command line and environment. */
  private static List<Proc> descendantsOf(long root) throws IOException {
    List<Long> pids = new ArrayList<>(Procs.descendants(root));
    pids.add(0, root);
    List<Proc> out = new ArrayList<>();
    for (long pid : pids) {
      Optional<String> cmdline = Procs.cmdline(pid);
      Optional<String> environ = Procs.environ(pid);
      if (cmdline.isPresent() && environ.isPresent()) {
        out.add(new Proc(pid, cmdline.get(), environ.get()));
      }
    }
    return out;
  }

  /**
   * Regular files under {@code root} (or {@code root} itself) modified since {@code since} that contain {@code text};
   * fails when there was no such file to scan (an empty answer must mean "scanned and not found").
   */
  private static List<Path> filesContaining(Path root, String text, Instant since) throws IOException {
    assertThat(root).as("where the secret is looked for").exists();
    int scanned = 0;
    List<Path> hits = new ArrayList<>();
    byte[] needle = text.getBytes(StandardCharsets.UTF_8);
    try (Stream<Path> files = Files.walk(root)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        try {
          if (Files.getLastModifiedTime(f).toInstant().isBefore(since) || Files.size(f) > 256L << 20) {
            continue;
          }
          byte[] bytes = Files.readAllBytes(f);
          scanned += bytes.length > 0 ? 1 : 0;
          if (indexOf(bytes, needle) >= 0) {
            hits.add(f);
          }
        } catch (IOException e) {
          // a socket or a file that went away
        }
      }
    }
    assertThat(scanned).as("non-empty files modified since %s under %s", since, root).isPositive();
    return hits;
  }

  private static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (hay[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
