package dev.ravel.telemetry.env;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.Preset;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.otlp.OtlpSettings;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class WorkerEnvironmentTest {
  private static final String SECRET = "s3cr3t-token";
  private static final Map<String, String> DRIVER_ENV = Map.of(
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4317",
      "OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20" + SECRET);
  private static final OtlpSettings OTLP = OtlpSettings.resolve(DRIVER_ENV);

  @org.junit.jupiter.api.io.TempDir
  static java.nio.file.Path runs;

  private static TelemetryConfig.Builder config() {
    return TelemetryConfig.builder().runId("run-1").runsDir(runs);
  }

  // ---------------------------------------------------------------- masking

  @ParameterizedTest
  @ValueSource(strings = {"file", "otlp", "both", "none"})
  void of_engineTracingOffMasksEveryTraceEnablingVariable(String exporter) {
    TelemetryConfig c = config().exporter(ExporterKind.parse("exporter", exporter)).engineTracing(false).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);

    assertThat(WorkerEnvironment.MASKED).contains(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_HEADERS");
    for (String name : WorkerEnvironment.MASKED) {
      assertThat(env.variables()).as(name).containsEntry(name, "");
      assertThat(env.masks(name)).as(name).isTrue();
    }
  }

  @Test
  void of_engineTracingOnWithFileExporterStillMasks() {
    TelemetryConfig c = config().exporter(ExporterKind.FILE).engineTracing(true).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);

    for (String name : WorkerEnvironment.MASKED) {
      assertThat(env.masks(name)).as(name).isTrue();
    }
  }

  @Test
  void of_disabledTelemetryMasksEvenWithEngineTracingRequested() {
    TelemetryConfig c = config().enabled(false).exporter(ExporterKind.OTLP).engineTracing(true).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);

    assertThat(env.masks("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")).isTrue();
    assertThat(env.variables().keySet()).noneMatch(k -> k.startsWith(OtlpSettings.WORKER_PREFIX));
  }

  @Test
  void masks_isFalseForVariablesOutsideThePolicy() {
    TelemetryConfig c = config().envPassthrough(List.of("HF_HOME")).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, Map.of("HF_HOME", ""));

    assertThat(env.variables()).containsEntry("HF_HOME", "");
    assertThat(env.masks("HF_HOME")).isFalse();
    assertThat(env.masks("RAVEL_TELEMETRY_PRESET")).isFalse();
  }

  // ---------------------------------------------------------------- telemetry config travels

  @Test
  void of_telemetryVariablesRoundTripToAnEqualConfig() {
    TelemetryConfig c = config().preset(Preset.DEFAULT).exporter(ExporterKind.BOTH).serviceName("svc")
        .engineSampleRatio(0.5).build();

    Map<String, String> vars = WorkerEnvironment.of(c, OTLP, DRIVER_ENV).variables();

    assertThat(vars).containsAllEntriesOf(c.toEnvironment());
    assertThat(TelemetryConfig.fromMap(Map.of(), vars)).isEqualTo(c);
  }

  @Test
  void of_fileExporterWithoutEngineTracingCarriesNoOtlpSettings() {
    TelemetryConfig c = config().exporter(ExporterKind.FILE).build();

    Map<String, String> vars = WorkerEnvironment.of(c, OTLP, DRIVER_ENV).variables();

    assertThat(vars.keySet()).noneMatch(k -> k.startsWith(OtlpSettings.WORKER_PREFIX));
    assertThat(vars.values()).noneMatch(v -> v.contains(SECRET) || v.contains("s3cr3t"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"otlp", "both"})
  void of_otlpExporterCarriesTheDriversResolvedSettings(String exporter) {
    TelemetryConfig c = config().exporter(ExporterKind.parse("exporter", exporter)).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);
    env.writeSecretFiles();
    Map<String, String> vars = env.variables();

    Map<String, String> expected = new java.util.LinkedHashMap<>(OTLP.toWorkerEnvironment());
    expected.remove("RAVEL_OTLP_HEADERS");
    expected.remove("RAVEL_OTLP_METRICS_HEADERS");
    assertThat(vars).containsAllEntriesOf(expected).doesNotContainKeys("RAVEL_OTLP_HEADERS", "RAVEL_OTLP_METRICS_HEADERS");
    assertThat(OtlpSettings.fromWorkerEnvironment(vars)).isEqualTo(OTLP);
  }

  @Test
  void of_headersTravelAsAnOwnerOnlyFileNotAsAValue() throws Exception {
    TelemetryConfig c = config().exporter(ExporterKind.OTLP).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);
    env.writeSecretFiles();

    assertThat(env.variables().values()).noneMatch(v -> v.contains(SECRET));
    java.nio.file.Path file = java.nio.file.Path.of(env.variables().get(WorkerEnvironment.HEADERS_FILE));
    java.nio.file.Path metricsFile = java.nio.file.Path.of(env.variables().get(WorkerEnvironment.METRICS_HEADERS_FILE));
    assertThat(env.secretFilePaths()).containsExactly(file, metricsFile);
    for (java.nio.file.Path f : List.of(file, metricsFile)) {
      assertThat(java.nio.file.Files.readString(f)).contains(SECRET);
      assertThat(java.nio.file.attribute.PosixFilePermissions.toString(java.nio.file.Files.getPosixFilePermissions(f)))
          .isEqualTo("rw-------");
    }
  }

  @Test
  void of_engineTracingOnCarriesOtlpSettingsEvenForFileExporter() {
    TelemetryConfig c = config().exporter(ExporterKind.FILE).engineTracing(true).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);
    env.writeSecretFiles();

    assertThat(OtlpSettings.fromWorkerEnvironment(env.variables())).isEqualTo(OTLP);
  }

  // ---------------------------------------------------------------- engine tracing

  @Test
  void of_engineTracingWithOtlpPointsTheEngineAtTheRunsEndpoint() {
    TelemetryConfig c = config().exporter(ExporterKind.OTLP).engineTracing(true).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);
    Map<String, String> vars = env.variables();

    assertThat(vars).containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4317")
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", OTLP.endpoint().toString())
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
        .containsEntry("OTEL_TRACES_SAMPLER", "parentbased_always_on");
    assertThat(env.masks("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")).isFalse();
    // the engine reads the traces-specific variables and gets Ravel's endpoint and protocol; header values
    // never travel as environment values (Ray stores runtime environments)
    OtlpSettings engine = OtlpSettings.resolve(vars);
    assertThat(engine.endpoint()).isEqualTo(OTLP.endpoint());
    assertThat(engine.protocol()).isEqualTo(OTLP.protocol());
    assertThat(engine.headers()).isEmpty();
    // generic ones stay masked so nothing inherited competes with them
    assertThat(env.masks("OTEL_EXPORTER_OTLP_ENDPOINT")).isTrue();
  }

  @Test
  void of_engineTracingWithHttpOtlpGivesTheFullTracesUrl() {
    OtlpSettings http = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"));
    TelemetryConfig c = config().exporter(ExporterKind.BOTH).preset(Preset.ALL).build();

    Map<String, String> vars = WorkerEnvironment.of(c, http, Map.of()).variables();

    assertThat(vars).containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces")
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf");
    OtlpSettings engine = OtlpSettings.resolve(vars);
    assertThat(engine.endpoint()).isEqualTo(http.endpoint());
    assertThat(engine.protocol()).isEqualTo(http.protocol());
  }

  // ---------------------------------------------------------------- pass-through

  @Test
  void of_mlflowCredentialsOfTheDriver_reachNoWorker() {
    TelemetryConfig c = config().trackers(List.of(dev.ravel.telemetry.config.TrackerKind.MLFLOW)).build();
    Map<String, String> driverEnv = Map.of("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000",
        "MLFLOW_TRACKING_TOKEN", "s3cr3t", "MLFLOW_TRACKING_PASSWORD", "pw");

    WorkerEnvironment w = WorkerEnvironment.of(c, OTLP, driverEnv);

    assertThat(w.variables().keySet()).noneMatch(k -> k.startsWith("MLFLOW_"));
    assertThat(w.variables().values()).doesNotContain("s3cr3t", "pw");
    assertThat(w.variables()).containsEntry("RAVEL_TELEMETRY_TRACKERS", "mlflow");
  }

  @Test
  void of_envPassthroughCopiesListedVariablesAndSkipsAbsentOnes() {
    TelemetryConfig c = config().envPassthrough(List.of("HF_HOME", "NCCL_DEBUG", "NOT_SET_ANYWHERE")).build();
    Map<String, String> driverEnv = Map.of("HF_HOME", "/data/hf", "NCCL_DEBUG", "INFO", "UNLISTED", "x");

    Map<String, String> vars = WorkerEnvironment.of(c, OTLP, driverEnv).variables();

    assertThat(vars).containsEntry("HF_HOME", "/data/hf").containsEntry("NCCL_DEBUG", "INFO")
        .doesNotContainKey("NOT_SET_ANYWHERE").doesNotContainKey("UNLISTED");
  }

  @Test
  void of_envPassthroughOfAMaskedVariableFails() {
    for (String masked : WorkerEnvironment.MASKED) {
      TelemetryConfig c = config().envPassthrough(List.of("HF_HOME", masked)).build();

      ConfigException e = catchThrowableOfType(ConfigException.class,
          () -> WorkerEnvironment.of(c, OTLP, Map.of(masked, "http://elsewhere:4317")));

      assertThat(e).as(masked).isNotNull();
      assertThat(e.key()).isEqualTo("telemetry.env_passthrough");
      assertThat(e.getMessage()).contains(masked);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"RAVEL_TELEMETRY_PRESET", "RAVEL_TELEMETRY_RUN_ID", "RAVEL_OTLP_HEADERS",
      "RAVEL_OTLP_ENDPOINT"})
  void of_envPassthroughOfARavelVariableFails(String name) {
    TelemetryConfig c = config().envPassthrough(List.of(name)).build();

    ConfigException e = catchThrowableOfType(ConfigException.class,
        () -> WorkerEnvironment.of(c, OTLP, Map.of(name, "x")));

    assertThat(e).isNotNull();
    assertThat(e.key()).isEqualTo("telemetry.env_passthrough");
    assertThat(e.getMessage()).contains(name);
  }

  // ---------------------------------------------------------------- secrets

  @Test
  void describe_neverContainsTheHeaderSecret() {
    TelemetryConfig c = config().exporter(ExporterKind.OTLP).engineTracing(true).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);

    // the secret travels in the headers file only; even with engine tracing on no variable holds it
    assertThat(env.variables().values()).noneMatch(v -> v.contains("s3cr3t"));
    assertThat(env.variables()).containsEntry("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "");
    assertThat(env.describe())
        .contains("RAVEL_OTLP_HEADERS_FILE=")
        .contains("OTEL_EXPORTER_OTLP_TRACES_HEADERS=\n")
        .contains("RAVEL_TELEMETRY_RUN_ID=run-1")
        .doesNotContain("s3cr3t");
    assertThat(env.toString())
        .contains("RAVEL_OTLP_HEADERS")
        .contains("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .doesNotContain("s3cr3t");
  }

  @Test
  void describe_masksSecretLookingPassthroughVariables() {
    TelemetryConfig c = config().envPassthrough(List.of("HF_TOKEN", "WANDB_API_KEY", "HF_HOME")).build();

    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP,
        Map.of("HF_TOKEN", "hf_s3cr3t", "WANDB_API_KEY", "wb_s3cr3t", "HF_HOME", "/data/hf"));

    assertThat(env.variables()).containsEntry("HF_TOKEN", "hf_s3cr3t");
    assertThat(env.describe())
        .contains("HF_TOKEN=****", "WANDB_API_KEY=****", "HF_HOME=/data/hf")
        .doesNotContain("s3cr3t");
    assertThat(env.toString()).doesNotContain("s3cr3t");
  }

  @Test
  void describe_listsEveryVariableSortedOnePerLine() {
    TelemetryConfig c = config().build();
    WorkerEnvironment env = WorkerEnvironment.of(c, OTLP, DRIVER_ENV);

    List<String> names = env.describe().lines().map(l -> l.substring(0, l.indexOf('='))).collect(Collectors.toList());

    assertThat(names).isSorted().containsExactlyInAnyOrderElementsOf(env.variables().keySet());
  }

  @Test
  void isSecret_recognisesHeadersTokensAndKeys() {
    assertThat(WorkerEnvironment.isSecret("OTEL_EXPORTER_OTLP_HEADERS")).isTrue();
    assertThat(WorkerEnvironment.isSecret("RAVEL_OTLP_HEADERS")).isTrue();
    assertThat(WorkerEnvironment.isSecret("hf_token")).isTrue();
    assertThat(WorkerEnvironment.isSecret("AWS_SECRET_ACCESS_KEY")).isTrue();
    assertThat(WorkerEnvironment.isSecret("OTEL_EXPORTER_OTLP_ENDPOINT")).isFalse();
    assertThat(WorkerEnvironment.isSecret("HF_HOME")).isFalse();
  }

  @Test
  void variables_areUnmodifiable() {
    WorkerEnvironment env = WorkerEnvironment.of(config().build(), OTLP, DRIVER_ENV);

    assertThat(env.variables()).isUnmodifiable();
  }
}
