package dev.ravel.driver.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.context.TraceCarrier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunSubmissionTest {
  static final String TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  @TempDir
  Path dir;
  Path home;
  Path config;
  Map<String, String> env;

  @BeforeEach
  void checkout() throws IOException {
    home = dir.resolve("ravel");
    Files.createDirectories(home.resolve("bin"));
    Path ravel = Files.writeString(home.resolve("bin").resolve("ravel"), "#!/bin/sh\n");
    Files.setPosixFilePermissions(ravel, PosixFilePermissions.fromString("rwxr-xr-x"));
    config = Files.writeString(dir.resolve("my run.yaml"), "run:\n  mode: sync\ntelemetry:\n  preset: per_step\n");
    env = new HashMap<>();
    env.put("RAVEL_HOME", home.toString());
    env.put("RAVEL_RAY_VENV", "/opt/venv");
    env.put("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector.example:4317");
  }

  private RunSubmission.Builder builder(String... overrides) {
    List<String> o = new java.util.ArrayList<>(List.of(overrides));
    o.add("telemetry.runs_dir=" + dir.resolve("runs"));
    return RunSubmission.builder(config).overrides(o).env(env);
  }

  @Test
  void request_forARun_runsThisCheckoutsRavelWithTheConfigAndRunId() {
    RunSubmission s = builder("grpo.steps=2", "telemetry.run_id=r-1").build();

    JobRequest r = s.request(TraceCarrier.EMPTY);

    assertThat(s.runId()).isEqualTo("r-1");
    assertThat(r.entrypoint()).startsWith(Shell.quote(home.resolve("bin/ravel").toString()) + " run '"
        + config.toAbsolutePath() + "' grpo.steps=2 ").endsWith(" telemetry.run_id=r-1");
    assertThat(r.metadata()).containsEntry("rl.run.id", "r-1");
    assertThat(r.submissionId()).hasValueSatisfying(id -> assertThat(id).matches("r-1-[0-9a-f]{6}"));
  }

  @Test
  void request_envVars_followTheWorkerEnvironmentPolicy() {
    RunSubmission s = builder("telemetry.run_id=r-2").build();

    Map<String, String> vars = s.request(TraceCarrier.of(TRACEPARENT, "", "")).envVars();

    assertThat(vars).containsEntry("RAVEL_TELEMETRY_RUN_ID", "r-2")
        .containsEntry("RAVEL_TELEMETRY_RUNS_DIR", dir.resolve("runs").toAbsolutePath().toString())
        .containsEntry("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "") // inherited trace endpoint masked (file exporter)
        .containsEntry("RAVEL_RAY_VENV", "/opt/venv")
        .containsEntry("JAVA_HOME", System.getProperty("java.home"))
        .containsEntry(JobContext.TRACEPARENT_ENV, TRACEPARENT)
        .containsEntry(JobContext.SUBMISSION_ID_ENV, s.submissionId());
  }

  @Test
  void request_otlpExporter_givesTheJobsDriverTheResolvedSettingsWithoutTheHeaderValues() {
    env.put("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20sekrit");
    RunSubmission s = builder("telemetry.exporter=otlp").build();

    JobRequest r = s.request(TraceCarrier.EMPTY);

    // the job's driver reads the submitter's resolved settings; the headers travel as an owner-only file
    assertThat(r.envVars()).containsEntry("RAVEL_OTLP_ENDPOINT", "http://collector.example:4317")
        .containsKey("RAVEL_OTLP_HEADERS_FILE").doesNotContainKey("RAVEL_OTLP_HEADERS");
    assertThat(r.envVars().values()).noneMatch(v -> v.contains("sekrit"));
    assertThat(dev.ravel.telemetry.otlp.OtlpSettings.fromWorkerEnvironment(r.envVars()).headers())
        .containsEntry("authorization", "Bearer sekrit");
    assertThat(r.toString()).doesNotContain("sekrit");
  }

  @Test
  void request_mlflowTracker_givesTheJobTheServerButNotTheCredentials() {
    env.put("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000");
    env.put("MLFLOW_EXPERIMENT_NAME", "grpo");
    env.put("MLFLOW_TRACKING_TOKEN", "sekrit-token");
    env.put("MLFLOW_TRACKING_PASSWORD", "sekrit-pw");
    RunSubmission s = builder("telemetry.trackers=[mlflow]").build();

    JobRequest r = s.request(TraceCarrier.EMPTY);

    assertThat(r.envVars()).containsEntry("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
        .containsEntry("MLFLOW_EXPERIMENT_NAME", "grpo").doesNotContainKeys("MLFLOW_TRACKING_TOKEN",
            "MLFLOW_TRACKING_PASSWORD");
    assertThat(r.envVars().values()).noneMatch(v -> v.contains("sekrit"));
    assertThat(r.toString()).doesNotContain("sekrit");
  }

  @Test
  void request_noTracker_givesTheJobNoMlflowSetting() {
    env.put("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000");

    assertThat(builder().build().request(TraceCarrier.EMPTY).envVars().keySet()).noneMatch(k -> k.startsWith("MLFLOW_"));
  }

  @Test
  void build_mlflowTrackerWithoutAServer_failsBeforeSubmittingNamingTheVariable() {
    assertThatThrownBy(() -> builder("telemetry.trackers=[mlflow]").build()).isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("MLFLOW_TRACKING_URI: not set");
  }

  @Test
  void request_mlflowServerGivenWithEnv_isTheJobs() {
    RunSubmission s = builder("telemetry.trackers=[mlflow]").envVar("MLFLOW_TRACKING_URI", "http://10.0.0.5:5000")
        .build();

    assertThat(s.request(TraceCarrier.EMPTY).envVars()).containsEntry("MLFLOW_TRACKING_URI", "http://10.0.0.5:5000");
  }

  @Test
  void request_extraEnvThatRavelSets_failsNamingIt() {
    RunSubmission s = builder().envVar("RAVEL_TELEMETRY_RUN_ID", "other").build();

    assertThatThrownBy(() -> s.request(TraceCarrier.EMPTY)).isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("runtime_env.env_vars.RAVEL_TELEMETRY_RUN_ID:");
  }

  @Test
  void request_clusterAddressInConfig_isClearedForTheJob() {
    RunSubmission s = builder("cluster.address=127.0.0.1:6379").submissionId("given-id").build();

    JobRequest r = s.request(TraceCarrier.EMPTY);

    assertThat(s.command()).contains("cluster.address=");
    assertThat(r.submissionId()).contains("given-id");
  }

  @Test
  void build_badOverride_failsBeforeSubmittingNamingTheKey() {
    assertThatThrownBy(() -> builder("grpo.stepz=2").build()).isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("grpo.stepz");
  }

  @Test
  void build_withoutRavelCheckout_failsNamingThePath() {
    env.put("RAVEL_HOME", dir.resolve("nowhere").toString());

    assertThatThrownBy(() -> builder().build()).hasMessageContaining(dir.resolve("nowhere").toString());
  }
}
