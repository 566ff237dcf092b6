package dev.ravel.it.env;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The standard OpenTelemetry variables a user sets for any instrumented program: {@code OTEL_METRICS_EXPORTER=none}
 * turns metrics off (traces still go to {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}), and an exporter Ravel does not
 * support stops the run before Ray. That {@code OTEL_SERVICE_NAME} and {@code OTEL_RESOURCE_ATTRIBUTES} name every
 * process of the run and that metrics go to {@code OTEL_EXPORTER_OTLP_METRICS_ENDPOINT}, not to the traces endpoint,
 * is asserted on {@link HeadEnvironmentIT}'s run, which has those variables too.
 */
final class OtelStandardVariablesIT {
  @TempDir
  Path tmp;

  // The run has one generation worker: what is asserted holds for every process of the run alike (driver,
  // generation worker, trainer), and a second worker would only be one more JVM to start.
  private Map<String, String> env(OtlpHttpSink traces, OtlpHttpSink metrics) {
    Map<String, String> env = new HashMap<>(SharedRayHead.env()); // the driver's OTEL_* never reach a head
    env.put("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
    env.put("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.baseUrl() + "/v1/traces");
    env.put("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", metrics.baseUrl() + "/v1/metrics");
    env.put("OTEL_SERVICE_NAME", "grpo-it");
    env.put("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=it,team=rl%20infra");
    return env;
  }

  private static String home(String path) {
    return Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize().resolve(path).toString();
  }

  @Test
  void run_metricsExporterNoneSendsNoMetricsAndAnUnsupportedOneStopsBeforeRay() throws Exception {
    try (OtlpHttpSink traces = new OtlpHttpSink(); OtlpHttpSink metrics = new OtlpHttpSink()) {
      Map<String, String> env = env(traces, metrics);
      env.put("OTEL_METRICS_EXPORTER", "none");
      RavelCommand.Result r = RavelCommand.run(env, 300, "run", home("examples/grpo-sync.yaml"), "grpo.steps=2",
          "generation.workers=1", "telemetry.exporter=otlp", "telemetry.runs_dir=" + tmp.resolve("runs"),
          "telemetry.run_id=it-no-metrics");

      assertThat(r.exitCode()).as("stdout:\n%s\nstderr:\n%s", r.stdout(), r.stderr()).isZero();
      assertThat(traces.spans()).isNotEmpty();
      assertThat(metrics.requests()).isZero();
      assertThat(traces.metrics()).isEmpty();

      env.put("OTEL_METRICS_EXPORTER", "prometheus");
      RavelCommand.Result bad = RavelCommand.run(env, 60, "run", home("examples/grpo-sync.yaml"),
          "telemetry.exporter=otlp", "telemetry.runs_dir=" + tmp.resolve("runs"));
      assertThat(bad.exitCode()).isEqualTo(2);
      assertThat(bad.stderr()).contains("OTEL_METRICS_EXPORTER").contains("prometheus").doesNotContain("\tat ");
      assertThat(bad.stdout()).doesNotContain("Ray head started");
    }
  }
}
