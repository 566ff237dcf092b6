package dev.ravel.it.env;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.telemetry.spans.StepMetricNames;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The standard OpenTelemetry variables a user sets for any instrumented program: {@code OTEL_SERVICE_NAME}
 * and {@code OTEL_RESOURCE_ATTRIBUTES} name every process of the run (driver and workers), and metrics go to
 * {@code OTEL_EXPORTER_OTLP_METRICS_ENDPOINT}, not to the traces endpoint; {@code OTEL_METRICS_EXPORTER=none}
 * turns them off.
 */
final class OtelStandardVariablesIT {
  @TempDir
  Path tmp;

  // The runs have one generation worker: what is asserted holds for every process of the run alike (driver,
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
  void run_namesEveryProcessAsTheVariablesSayAndSendsMetricsToTheirOwnEndpoint() throws Exception {
    try (OtlpHttpSink traces = new OtlpHttpSink(); OtlpHttpSink metrics = new OtlpHttpSink()) {
      RavelCommand.Result r = RavelCommand.run(env(traces, metrics), 300, "run", home("examples/grpo-sync.yaml"),
          "grpo.steps=3", "generation.workers=1", "telemetry.exporter=otlp", "telemetry.runs_dir=" + tmp.resolve("runs"),
          "telemetry.run_id=it-otel-vars");

      assertThat(r.exitCode()).as("stdout:\n%s\nstderr:\n%s", r.stdout(), r.stderr()).isZero();
      // Ray's own messages are not on the terminal: its native log lines and log4j's status lines go to the
      // driver's log file, which the run names at its end
      assertThat((r.stdout() + r.stderr()).lines())
          .noneMatch(l -> l.matches("^\\[\\d{4}-\\d\\d-\\d\\d [\\d:,]+ [DIWEF] \\d+ \\d+\\] .*"))
          .noneMatch(l -> l.contains("Starting configuration") || l.contains("Stopping configuration"));
      java.util.regex.Matcher log = java.util.regex.Pattern.compile("Ray's messages: (\\S+)").matcher(r.stdout());
      if (log.find()) {
        assertThat(Path.of(log.group(1))).isRegularFile();
        java.nio.file.Files.deleteIfExists(Path.of(log.group(1)));
      }
      assertThat(traces.spans()).isNotEmpty().allSatisfy(s -> {
        assertThat(s.service()).isEqualTo("grpo-it");
        assertThat(s.resource()).containsEntry("deployment.environment.name", "it").containsEntry("team", "rl infra")
            .containsEntry("rl.run.id", "it-otel-vars");
      });
      assertThat(traces.spans()).extracting(OtlpHttpSink.Received::role).contains("driver", "generation_worker",
          "policy_trainer");
      assertThat(traces.metrics()).as("no metrics at the traces endpoint").isEmpty();

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
