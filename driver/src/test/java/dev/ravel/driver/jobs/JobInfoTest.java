package dev.ravel.driver.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class JobInfoTest {
  /** {@code GET /api/jobs/exp-1} as Ray 2.39.0 answered it (plus a field a later Ray might add). */
  static final String DETAILS = """
      {"type": "SUBMISSION", "job_id": "02000000", "submission_id": "exp-1",
       "driver_info": {"id": "02000000", "node_ip_address": "127.0.0.1", "pid": "123"},
       "status": "FAILED", "entrypoint": "echo hi", "message": "Job entrypoint command failed with exit code 3.",
       "error_type": null, "start_time": 1795942438187, "end_time": 1795942442857,
       "metadata": {"rl.run.id": "r1"}, "runtime_env": {"env_vars": {"FOO": "bar", "OTEL_EXPORTER_OTLP_HEADERS": "k=v"}},
       "driver_agent_http_address": "http://127.0.0.1:24004", "driver_node_id": "2ca4", "driver_exit_code": 3,
       "some_future_field": [1, 2]}
      """;

  @Test
  void from_details_mapsEveryField() {
    JobInfo j = JobInfo.from(Json.read(DETAILS, Json.Details.class, "test"));

    assertThat(j.type()).isEqualTo(JobInfo.SUBMISSION);
    assertThat(j.submissionId()).contains("exp-1");
    assertThat(j.jobId()).contains("02000000");
    assertThat(j.id()).isEqualTo("exp-1");
    assertThat(j.status()).isEqualTo(JobStatus.FAILED);
    assertThat(j.message()).startsWith("Job entrypoint command failed");
    assertThat(j.entrypoint()).isEqualTo("echo hi");
    assertThat(j.metadata()).containsExactlyEntriesOf(java.util.Map.of("rl.run.id", "r1"));
    assertThat(j.runtimeEnv()).containsKey("env_vars");
    assertThat(j.startTime()).contains(Instant.ofEpochMilli(1795942438187L));
    assertThat(j.endTime()).contains(Instant.ofEpochMilli(1795942442857L));
    assertThat(j.driverExitCode()).hasValue(3);
    assertThat(j.errorType()).isEmpty();
  }

  @Test
  void from_pendingJobWithNulls_hasEmptyOptionals() {
    String pending = """
        {"type": "SUBMISSION", "job_id": null, "submission_id": "p", "driver_info": null, "status": "PENDING",
         "entrypoint": "sleep 1", "message": null, "start_time": null, "end_time": null, "metadata": null,
         "runtime_env": null, "driver_exit_code": null}
        """;

    JobInfo j = JobInfo.from(Json.read(pending, Json.Details.class, "test"));

    assertThat(j.status().isTerminal()).isFalse();
    assertThat(j.jobId()).isEmpty();
    assertThat(j.startTime()).isEmpty();
    assertThat(j.metadata()).isEmpty();
    assertThat(j.runtimeEnv()).isEmpty();
    assertThat(j.message()).isEmpty();
    assertThat(j.driverExitCode()).isEmpty();
  }

  @Test
  void readList_withSubmissionAndDriverJobs_mapsBoth() {
    String list = "[" + DETAILS + ", {\"type\": \"DRIVER\", \"job_id\": \"01000000\", \"submission_id\": null,"
        + " \"status\": \"SUCCEEDED\", \"entrypoint\": \"\"}]";

    List<JobInfo> jobs = Json.readList(list, Json.Details.class, "test").stream().map(JobInfo::from).toList();

    assertThat(jobs).extracting(JobInfo::type).containsExactly(JobInfo.SUBMISSION, JobInfo.DRIVER);
    assertThat(jobs.get(1).id()).isEqualTo("01000000");
  }

  @Test
  void from_unknownStatus_failsNamingIt() {
    String odd = "{\"type\": \"SUBMISSION\", \"submission_id\": \"x\", \"status\": \"PAUSED\", \"entrypoint\": \"e\"}";

    assertThatThrownBy(() -> JobInfo.from(Json.read(odd, Json.Details.class, "test")))
        .isInstanceOf(JobsException.class).hasMessageContaining("'PAUSED'");
  }

  @Test
  void read_notJson_failsWithJobsException() {
    assertThatThrownBy(() -> Json.read("<html>", Json.Details.class, "job 'x'"))
        .isInstanceOf(JobsException.class).hasMessageStartingWith("job 'x': unexpected answer");
  }

  @Test
  void toString_withSecretEnvVars_masksThem() {
    JobInfo j = JobInfo.from(Json.read(DETAILS, Json.Details.class, "test"));

    assertThat(j.toString()).contains("FOO=bar", "OTEL_EXPORTER_OTLP_HEADERS=****").doesNotContain("k=v");
  }

  @Test
  void status_terminalOnes_areStoppedSucceededFailed() {
    assertThat(List.of(JobStatus.values())).filteredOn(JobStatus::isTerminal)
        .containsExactly(JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED);
  }
}
