package dev.ravel.driver.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class JobsClientTest {
  private FakeDashboard dashboard;
  private JobsClient client;

  @BeforeEach
  void start() throws IOException {
    dashboard = new FakeDashboard();
    client = JobsClient.builder().baseUrl(dashboard.url()).pollInterval(Duration.ofMillis(20)).build();
  }

  @AfterEach
  void stop() {
    dashboard.close();
  }

  static String details(String id, String status) {
    return "{\"type\": \"SUBMISSION\", \"job_id\": null, \"submission_id\": \"" + id + "\", \"status\": \"" + status
        + "\", \"entrypoint\": \"e\", \"message\": null}";
  }

  @Test
  void aliveNodeAddresses_readsTheNodeSummaryAndSkipsDeadNodes() {
    // the shape of Ray's dashboard (modules/node: data.summary[].raylet is the node's GCS entry, camelCase)
    dashboard.on("GET", "/nodes", 200, "{\"result\": true, \"msg\": \"Node summary fetched.\", \"data\": {\"summary\": ["
        + "{\"hostname\": \"h\", \"raylet\": {\"nodeId\": \"a\", \"state\": \"ALIVE\", \"nodeManagerAddress\": \"10.231.9.1\"}},"
        + "{\"raylet\": {\"nodeId\": \"b\", \"state\": \"DEAD\", \"nodeManagerAddress\": \"10.231.9.2\"}},"
        + "{\"raylet\": {\"nodeId\": \"c\", \"state\": \"ALIVE\", \"nodeManagerAddress\": \"10.231.9.3\"}}],"
        + " \"node_logical_resources\": {}}}");

    assertThat(client.aliveNodeAddresses()).containsExactly("10.231.9.1", "10.231.9.3");
    assertThat(dashboard.requests).containsExactly("GET /nodes");
  }

  @Test
  void submit_request_postsRayJsonAndReturnsTheSubmissionId() throws Exception {
    dashboard.on("POST", "/api/jobs/", 200, "{\"job_id\": \"s-1\", \"submission_id\": \"s-1\"}");

    JobSubmission s = client.submit(JobRequest.builder().entrypoint("echo hi").submissionId("s-1")
        .envVar("A", "1").build());

    assertThat(s).isEqualTo(new JobSubmission("s-1", "s-1"));
    JsonNode body = Json.MAPPER.readTree(dashboard.bodies.get(0));
    assertThat(body.get("entrypoint").asText()).isEqualTo("echo hi");
    assertThat(body.at("/runtime_env/env_vars/A").asText()).isEqualTo("1");
  }

  @Test
  void submit_serverTraceback_throwsHttpExceptionWithStatusAndLastErrorLine() {
    String traceback = "Traceback (most recent call last):\n  File \"job_head.py\", line 343, in submit_job\n"
        + "RuntimeError: Request failed with status code 400: Traceback (most recent call last):\n"
        + "  File \"job_manager.py\", line 470\n"
        + "ValueError: Job with submission_id s-1 already exists. Please use a different submission_id.\n.\n";
    dashboard.on("POST", "/api/jobs/", 500, traceback);

    assertThatThrownBy(() -> client.submit(JobRequest.builder().entrypoint("true").submissionId("s-1").build()))
        .isInstanceOfSatisfying(JobsHttpException.class, e -> {
          assertThat(e.statusCode()).isEqualTo(500);
          assertThat(e.serverMessage()).isEqualTo(
              "ValueError: Job with submission_id s-1 already exists. Please use a different submission_id.");
          assertThat(e.responseBody()).isEqualTo(traceback);
          assertThat(e.getMessage()).contains("submit job 's-1'", dashboard.url(), "HTTP 500", "already exists");
        });
  }

  @Test
  void submit_serverQuotesASecretBack_errorHasItMasked() {
    dashboard.on("POST", "/api/jobs/", 400, "Traceback (most recent call last):\n"
        + "TypeError: bad runtime_env {'env_vars': {'HF_TOKEN': 'hf_s3cr3t'}}\n");

    assertThatThrownBy(() -> client.submit(JobRequest.builder().entrypoint("true").envVar("HF_TOKEN", "hf_s3cr3t")
        .build())).isInstanceOfSatisfying(JobsHttpException.class, e -> {
          assertThat(e.getMessage()).doesNotContain("hf_s3cr3t").contains("'HF_TOKEN': '****'");
          assertThat(e.responseBody()).doesNotContain("hf_s3cr3t");
        });
  }

  @Test
  void status_unknownId_throwsJobNotFoundNamingTheId() {
    assertThatThrownBy(() -> client.status("no-such-job"))
        .isInstanceOfSatisfying(JobNotFoundException.class, e -> {
          assertThat(e.id()).isEqualTo("no-such-job");
          assertThat(e.getMessage()).contains("'no-such-job'", dashboard.url());
        });
  }

  @Test
  void logsStopDelete_unknownId_throwJobNotFound() {
    assertThatThrownBy(() -> client.logs("nope")).isInstanceOf(JobNotFoundException.class);
    assertThatThrownBy(() -> client.stop("nope")).isInstanceOf(JobNotFoundException.class);
    assertThatThrownBy(() -> client.delete("nope")).isInstanceOf(JobNotFoundException.class);
    assertThatThrownBy(() -> client.followLogs("nope", l -> { }, Duration.ofSeconds(5)))
        .isInstanceOf(JobNotFoundException.class);
  }

  @Test
  void status_idWithOddCharacters_isOnePathSegment() {
    dashboard.on("GET", "/api/jobs/a%2Fb%20c", 200, details("a/b c", "RUNNING"));

    assertThat(client.status("a/b c").status()).isEqualTo(JobStatus.RUNNING);
  }

  @Test
  void list_unreachableDashboard_throwsNamingTheUrl() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      port = s.getLocalPort();
    }
    JobsClient nowhere = JobsClient.builder().baseUrl("127.0.0.1:" + port).connectTimeout(Duration.ofSeconds(2)).build();

    assertThatThrownBy(nowhere::list).isInstanceOfSatisfying(DashboardUnreachableException.class, e -> {
      assertThat(e.url().toString()).isEqualTo("http://127.0.0.1:" + port);
      assertThat(e.getMessage()).contains("http://127.0.0.1:" + port);
    });
  }

  @Test
  void stopAndDelete_answers_areReturned() {
    dashboard.on("POST", "/api/jobs/j/stop", 200, "{\"stopped\": true}");
    dashboard.on("DELETE", "/api/jobs/j", 200, "{\"deleted\": true}");

    assertThat(client.stop("j")).isTrue();
    assertThat(client.delete("j")).isTrue();
  }

  @Test
  void followLogs_websocketRefused_pollsAndPassesOnNewLinesUntilTerminal() {
    AtomicInteger calls = new AtomicInteger();
    String[] logs = {"", "one\n", "one\ntw", "one\ntwo\nthree", "one\ntwo\nthree\nfour\n"};
    dashboard.on("GET", "/api/jobs/j", b -> new FakeDashboard.Answer(200,
        details("j", calls.get() >= 3 ? "SUCCEEDED" : "RUNNING")));
    dashboard.on("GET", "/api/jobs/j/logs", b -> {
      int i = Math.min(calls.getAndIncrement(), logs.length - 1);
      return new FakeDashboard.Answer(200, "{\"logs\": " + quote(logs[i]) + "}");
    });
    List<String> lines = new ArrayList<>();

    JobStatus s = client.followLogs("j", lines::add, Duration.ofSeconds(10));

    assertThat(s).isEqualTo(JobStatus.SUCCEEDED);
    assertThat(lines).containsExactly("one", "two", "three", "four");
    assertThat(dashboard.requests).contains("GET /api/jobs/j/logs/tail");
  }

  @Test
  @Timeout(60) // a hang guard: it returns at its timeout (0.3 s) instead of following a job that never ends
  void followLogs_jobThatNeverEnds_returnsItsStatusAtTheTimeout() {
    dashboard.on("GET", "/api/jobs/j", 200, details("j", "RUNNING"));
    dashboard.on("GET", "/api/jobs/j/logs", 200, "{\"logs\": \"partial line\"}");
    List<String> lines = new ArrayList<>();

    JobStatus s = client.followLogs("j", lines::add, Duration.ofMillis(300));

    assertThat(s).isEqualTo(JobStatus.RUNNING);
    assertThat(lines).containsExactly("partial line");
  }

  @Test
  void waitFor_runningThenStopped_returnsStopped() {
    AtomicInteger calls = new AtomicInteger();
    dashboard.on("GET", "/api/jobs/j", b -> new FakeDashboard.Answer(200,
        details("j", calls.incrementAndGet() < 3 ? "RUNNING" : "STOPPED")));

    assertThat(client.waitFor("j", Duration.ofSeconds(10))).isEqualTo(JobStatus.STOPPED);
  }

  @Test
  void waitFor_timeoutPasses_returnsTheLastStatus() {
    dashboard.on("GET", "/api/jobs/j", 200, details("j", "PENDING"));

    assertThat(client.waitFor("j", Duration.ofMillis(100))).isEqualTo(JobStatus.PENDING);
  }

  @Test
  void builder_addressWithoutScheme_meansHttpAndTrailingSlashIsDropped() {
    assertThat(JobsClient.builder().baseUrl("127.0.0.1:8265/").build().baseUrl().toString())
        .isEqualTo("http://127.0.0.1:8265");
    assertThat(JobsClient.builder().build().baseUrl()).isEqualTo(JobsClient.DEFAULT_URL);
  }

  @Test
  void builder_nonHttpAddress_failsNamingIt() {
    assertThatThrownBy(() -> JobsClient.builder().baseUrl("ftp://127.0.0.1:21"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ftp://127.0.0.1:21");
  }

  @Test
  void serverMessage_plainText_isItsFirstLine() {
    assertThat(JobsClient.serverMessage("Job x does not exist")).isEqualTo("Job x does not exist");
    assertThat(JobsClient.serverMessage("")).isEmpty();
  }

  private static String quote(String s) {
    return Json.write(s);
  }
}
