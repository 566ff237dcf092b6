package dev.ravel.it.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.grpo.GrpoRun;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.Procs;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.process.ProcessIdentity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker-environment policy reaches the servers the workers launch: the shell that started Ray exported
 * an OTLP endpoint (and a sampler); engine tracing is off. The launched {@code ravel serve} processes see
 * those variables masked, and the endpoint receives nothing.
 */
final class ServerEnvironmentIT {
  static final List<String> VARS = List.of("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
      "OTEL_TRACES_SAMPLER");

  @TempDir
  static Path runs;

  @Test
  void launchedServers_seeTheHeadsOtlpVariablesMaskedAndExportNothingThere() throws Exception {
    Map<Long, Map<String, String>> seen = new LinkedHashMap<>();
    Set<ProcessIdentity> servers = ConcurrentHashMap.newKeySet();
    try (OtlpHttpSink sink = new OtlpHttpSink()) {
      RunConfig config = RunConfig.load(null, List.of("telemetry.run_id=it-serve-env", "telemetry.runs_dir=" + runs,
          "grpo.steps=2", "grpo.prompts_per_step=4", "grpo.group_size=4", "generation.workers=2",
          "generation.backend=openai", "generation.launch=ravel", "telemetry.engine_tracing=false"), TestEnv.clean());
      DriverSession session = DriverSession.builder(config.telemetry()).env(TestEnv.clean())
          .headEnv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.baseUrl())
          .headEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", sink.baseUrl() + "/v1/traces")
          .headEnv("OTEL_TRACES_SAMPLER", "always_on")
          .workerJvmOptions(List.of("-Xmx256m", "-XX:+UseSerialGC")).start();
      try {
        new GrpoRun(session, config, (metrics, total) -> seen.putAll(serverEnvironments(config, servers))).run();
      } finally {
        session.close();
      }
      // No window waited out: an export ends only when the sink has answered it, and a process that has exited
      // sends nothing more. Once every launched server has exited, what they sent the sink is all counted.
      assertThat(servers).hasSize(2);
      for (ProcessIdentity server : servers) {
        assertThat(server.awaitExit(120_000)).as("server %s exited after the session closed", server).isTrue();
      }
      assertThat(seen).hasSize(2);
      seen.forEach((pid, env) -> assertThat(env).as("server pid " + pid).containsOnlyKeys(VARS)
          .allSatisfy((k, v) -> assertThat(v).as(k).isIn("", "<unset>")));
      assertThat(sink.requests()).isZero();
    }
  }

  /** The masked variables as each running server sees them, by PID (from its log file's name). */
  private static Map<Long, Map<String, String>> serverEnvironments(RunConfig config, Set<ProcessIdentity> servers) {
    Map<Long, Map<String, String>> out = new LinkedHashMap<>();
    try (Stream<Path> files = Files.list(config.telemetry().runDir())) {
      for (Path f : files.toList()) {
        String n = f.getFileName().toString();
        if (n.startsWith("inference-server-") && n.endsWith(".log")) {
          long pid = Long.parseLong(n.substring("inference-server-".length(), n.length() - 4));
          Map<String, String> view = new LinkedHashMap<>();
          servers.add(ProcessIdentity.of(pid).orElseThrow(() -> new AssertionError("server " + pid + " is gone")));
          String environ = Procs.environ(pid).orElseThrow(() -> new AssertionError("server " + pid + " is gone"));
          List<String> entries = new ArrayList<>(Arrays.asList(environ.split("\n")));
          for (String e : entries) {
            int eq = e.indexOf('=');
            if (eq > 0 && VARS.contains(e.substring(0, eq))) {
              view.put(e.substring(0, eq), e.substring(eq + 1));
            }
          }
          VARS.forEach(v -> view.putIfAbsent(v, "<unset>"));
          out.put(pid, view);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }
}
