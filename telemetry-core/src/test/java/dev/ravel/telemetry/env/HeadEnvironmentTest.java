package dev.ravel.telemetry.env;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.config.TelemetryConfig;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class HeadEnvironmentTest {
  private static final Map<String, String> DRIVER = Map.of(
      "PATH", "/usr/bin",
      "HOME", "/root",
      "OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4318",
      "OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer s3cr3t",
      "OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem",
      "OTEL_SERVICE_NAME", "my-trainer",
      "RAVEL_TELEMETRY_PRESET", "all",
      "RAVEL_OTLP_HEADERS_FILE", "/runs/x/.secrets/otlp-headers");

  @Test
  void of_holdsBackEveryTelemetryVariableAndKeepsTheRest() {
    HeadEnvironment h = HeadEnvironment.of(TelemetryConfig.builder().build(), DRIVER);

    assertThat(h.variables()).containsOnlyKeys("PATH", "HOME");
    assertThat(h.heldBack()).containsExactly("OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME", "RAVEL_OTLP_HEADERS_FILE", "RAVEL_TELEMETRY_PRESET");
    assertThat(h.passed()).isEmpty();
  }

  @Test
  void of_passthroughNamesReachTheHead() {
    TelemetryConfig c = TelemetryConfig.builder().envPassthrough(List.of("OTEL_SERVICE_NAME")).build();

    HeadEnvironment h = HeadEnvironment.of(c, DRIVER);

    assertThat(h.variables()).containsEntry("OTEL_SERVICE_NAME", "my-trainer");
    assertThat(h.passed()).containsExactly("OTEL_SERVICE_NAME");
    assertThat(h.heldBack()).doesNotContain("OTEL_SERVICE_NAME");
  }

  @Test
  void summary_namesOnlyNeverValues() {
    HeadEnvironment h = HeadEnvironment.of(TelemetryConfig.builder().envPassthrough(List.of("OTEL_SERVICE_NAME"))
        .build(), DRIVER);

    assertThat(h.summary()).startsWith("held back OTEL_EXPORTER_OTLP_CERTIFICATE, OTEL_EXPORTER_OTLP_ENDPOINT")
        .contains("passed OTEL_SERVICE_NAME (telemetry.env_passthrough)")
        .doesNotContain("s3cr3t").doesNotContain("collector.example").doesNotContain("/etc/ca.pem");
    assertThat(h.toString()).doesNotContain("s3cr3t");
    assertThat(HeadEnvironment.of(TelemetryConfig.builder().build(), Map.of("PATH", "/bin")).summary())
        .isEqualTo("held back none; passed none");
  }

  @Test
  void of_mlflowSettingsAndCredentials_areHeldBackFromTheHead() {
    Map<String, String> driver = Map.of("PATH", "/usr/bin", "MLFLOW_TRACKING_URI", "http://127.0.0.1:5000",
        "MLFLOW_TRACKING_TOKEN", "s3cr3t", "MLFLOW_TRACKING_USERNAME", "me", "MLFLOW_TRACKING_PASSWORD", "pw");

    HeadEnvironment h = HeadEnvironment.of(TelemetryConfig.builder().build(), driver);

    assertThat(h.variables()).containsOnlyKeys("PATH");
    assertThat(h.heldBack()).containsExactly("MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
        "MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME");
    assertThat(h.summary()).doesNotContain("s3cr3t").doesNotContain("pw");
  }

  @Test
  void isTelemetryVariable_otelMlflowAndRavelsOwnOnly() {
    assertThat(WorkerEnvironment.isTelemetryVariable("OTEL_TRACES_SAMPLER")).isTrue();
    assertThat(WorkerEnvironment.isTelemetryVariable("RAVEL_TELEMETRY_RUN_ID")).isTrue();
    assertThat(WorkerEnvironment.isTelemetryVariable("RAVEL_OTLP_ENDPOINT")).isTrue();
    assertThat(WorkerEnvironment.isTelemetryVariable("MLFLOW_TRACKING_TOKEN")).isTrue();
    assertThat(WorkerEnvironment.isTelemetryVariable("RAVEL_RAY_VENV")).isFalse();
    assertThat(WorkerEnvironment.isTelemetryVariable("PATH")).isFalse();
  }
}
