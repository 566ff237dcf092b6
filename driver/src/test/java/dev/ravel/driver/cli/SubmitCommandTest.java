package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The submit and jobs commands against a stand-in dashboard on 127.0.0.1 (Ray 2.39.0's answer shapes). */
class SubmitCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  Path dir;

  private HttpServer server;
  private final Map<String, String> answers = new ConcurrentHashMap<>();
  private final List<String> posted = Collections.synchronizedList(new ArrayList<>());
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private PrintStream savedOut;
  private PrintStream savedErr;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", ex -> {
      String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      String key = ex.getRequestMethod() + " " + ex.getRequestURI().getRawPath();
      if (ex.getRequestMethod().equals("POST")) {
        posted.add(body);
      }
      String answer = answers.get(key);
      boolean ws = "websocket".equalsIgnoreCase(ex.getRequestHeaders().getFirst("Upgrade"));
      int status = ws ? 501 : answer == null ? 404 : 200;
      String[] parts = key.split("/");
      byte[] b = (answer != null && !ws ? answer : "Job " + parts[parts.length - 1] + " does not exist")
          .getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(status, b.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(b);
      }
    });
    server.start();
    savedOut = System.out;
    savedErr = System.err;
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void stop() {
    System.setOut(savedOut);
    System.setErr(savedErr);
    server.stop(0);
  }

  private String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  private static String details(String id, String status) {
    return "{\"type\": \"SUBMISSION\", \"submission_id\": \"" + id + "\", \"status\": \"" + status
        + "\", \"entrypoint\": \"e\", \"message\": \"Job was intentionally stopped.\"}";
  }

  @Test
  void submit_entrypointAfterDoubleDash_submitsTheWordsQuotedAndPrintsTheId() throws Exception {
    answers.put("POST /api/jobs/", "{\"job_id\": \"raysubmit_1\", \"submission_id\": \"raysubmit_1\"}");

    int code = RavelCli.execute("submit", "--address", url(), "--metadata", "team=rl", "--", "echo", "a b");

    assertThat(code).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8).strip()).isEqualTo("raysubmit_1");
    JsonNode body = JSON.readTree(posted.get(0));
    assertThat(body.get("entrypoint").asText()).isEqualTo("echo 'a b'");
    assertThat(body.at("/metadata/team").asText()).isEqualTo("rl");
  }

  @Test
  void submit_withoutEntrypoint_isAUsageError() {
    int code = RavelCli.execute("submit", "--address", url());

    assertThat(code).isEqualTo(ExitCodes.USAGE);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("after --");
  }

  @Test
  void submitWait_jobEndsStopped_exitsWithTheStoppedCode() {
    answers.put("POST /api/jobs/", "{\"job_id\": \"j1\", \"submission_id\": \"j1\"}");
    answers.put("GET /api/jobs/j1", details("j1", "STOPPED"));
    answers.put("GET /api/jobs/j1/logs", "{\"logs\": \"started\\n\"}");

    int code = RavelCli.execute("submit", "--address", url(), "--wait", "--submission-id", "j1", "--", "sleep", "300");

    assertThat(code).isEqualTo(SubmitCommand.EXIT_STOPPED).isEqualTo(3);
    assertThat(out.toString(StandardCharsets.UTF_8)).contains("started");
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("job j1 STOPPED");
  }

  @Test
  void jobsStatus_unknownId_printsOneLineNamingTheId() {
    int code = RavelCli.execute("jobs", "status", "no-such-job", "--address", url());

    assertThat(code).isEqualTo(1);
    String e = err.toString(StandardCharsets.UTF_8).strip();
    assertThat(e).startsWith("ravel: no Ray job 'no-such-job' at " + url()).doesNotContain("\n");
  }

  @Test
  void jobsList_unreachableDashboard_printsOneLineNamingTheUrl() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      port = s.getLocalPort();
    }

    int code = RavelCli.execute("jobs", "list", "--address", "http://127.0.0.1:" + port);

    assertThat(code).isEqualTo(1);
    String e = err.toString(StandardCharsets.UTF_8).strip();
    assertThat(e).startsWith("ravel: Ray dashboard at http://127.0.0.1:" + port + " is unreachable")
        .doesNotContain("\n");
  }

  @Test
  void submitRun_config_submitsThisCheckoutsRavelRunWithTheSubmittersSpanAsParent() throws Exception {
    answers.put("POST /api/jobs/", "{\"job_id\": \"x\", \"submission_id\": \"cli-run-1-sub\"}");
    String saved = System.getProperty("ravel.home");
    Path checkout = Path.of("..").toAbsolutePath().normalize(); // the driver module's parent: this checkout
    System.setProperty("ravel.home", checkout.toString());
    int code;
    try {
      code = RavelCli.execute("submit", "run", checkout.resolve("examples/grpo-sync.yaml").toString(),
          "grpo.steps=2", "telemetry.run_id=cli-run-1", "telemetry.runs_dir=" + dir, "--address", url(),
          "--submission-id", "cli-run-1-sub");
    } finally {
      if (saved == null) {
        System.clearProperty("ravel.home");
      } else {
        System.setProperty("ravel.home", saved);
      }
    }

    assertThat(code).as(err.toString(StandardCharsets.UTF_8)).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8).strip()).isEqualTo("cli-run-1-sub");
    JsonNode body = JSON.readTree(posted.get(0));
    assertThat(body.get("entrypoint").asText()).startsWith(checkout.resolve("bin/ravel") + " run ")
        .contains("grpo.steps=2").endsWith("telemetry.run_id=cli-run-1");
    assertThat(body.at("/metadata/rl.run.id").asText()).isEqualTo("cli-run-1");
    JsonNode vars = body.at("/runtime_env/env_vars");
    assertThat(vars.get("RAVEL_TELEMETRY_RUN_ID").asText()).isEqualTo("cli-run-1");
    String traceparent = vars.get("RAVEL_PARENT_TRACEPARENT").asText();
    SpanRecord submit = RunTraces.readDir(dir.resolve("cli-run-1")).named(SpanNames.JOB_SUBMIT).get(0);
    assertThat(traceparent).startsWith("00-" + submit.traceId() + "-" + submit.spanId() + "-");
    assertThat(submit.role()).isEqualTo("submitter");
  }
}
