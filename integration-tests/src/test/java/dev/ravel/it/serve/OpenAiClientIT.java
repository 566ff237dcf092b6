package dev.ravel.it.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The official {@code openai} Python client (PyPI, in the virtualenv of {@code scripts/setup-openai-client.sh},
 * given as system property {@code ravel.openai.venv}) against {@code bin/ravel serve} in its own process:
 * {@code integration-tests/src/test/python/test_openai_client.py} (text and token-id completions with
 * {@code n=4} and log-probs, chat, streaming, a 400) must pass; then, from the server's span files, a
 * request with a {@code traceparent} header gave one {@code llm_request} per choice with exactly that
 * trace id and parent span id (and their lifecycle children below them, nothing else of the server), and a
 * request without one gave root spans in traces of their own.
 */
final class OpenAiClientIT {
  /** The trace context the Python test sends in {@code traceparent} (passed to it in the environment). */
  static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
  static final String PARENT_ID = "00f067aa0ba902b7";
  /** The {@code X-Request-Id} of the traced request (n=4) and of the one without a traceparent (n=2). */
  static final String TRACED_REQUEST_ID = "pyclient-traced";
  static final String ROOT_REQUEST_ID = "pyclient-root";
  static final int TRACED_CHOICES = 4;
  static final int ROOT_CHOICES = 2;

  static final String RUN_ID = "it-openai-client";
  static final Pattern LISTENING = Pattern.compile("ravel serve: listening on (http://127\\.0\\.0\\.1:(\\d+))");
  static final int SPAN_KIND_SERVER = 2;
  /** The children of an {@code llm_request} (its lifecycle). */
  static final Set<String> LIFECYCLE = Set.of(SpanNames.LLM_REQUEST_QUEUED, SpanNames.LLM_REQUEST_PREFILL,
      SpanNames.LLM_REQUEST_DECODE, SpanNames.LLM_REQUEST_PREEMPTED);

  @TempDir
  static Path dir;
  static Process server;
  static Path serverOut;
  static Path serverErr;
  static int serverExit;
  static int pytestExit;
  static String pytestOutput;
  static RunTraces traces;

  @BeforeAll
  static void serveAndRunTheClient() throws Exception {
    Path python = venvPython();
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    Path runs = dir.resolve("runs");
    serverOut = dir.resolve("serve-out.txt");
    serverErr = dir.resolve("serve-err.txt");

    Map<String, String> env = TestEnv.clean();
    env.put("RAVEL_JAVA_OPTS", "-Xmx512m -XX:+UseSerialGC");
    ProcessBuilder pb = new ProcessBuilder(home.resolve("bin/ravel").toString(), "serve", "--port", "0",
        "--telemetry", "runs_dir=" + runs, "--telemetry", "run_id=" + RUN_ID, "--telemetry", "exporter=file",
        "--telemetry", "engine_tracing=true", "--telemetry", "engine_sample_ratio=1.0")
        .redirectOutput(serverOut.toFile()).redirectError(serverErr.toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    server = pb.start();
    try {
      Matcher m = RavelCommand.awaitOutput(serverOut, server, LISTENING, "", 180);
      runPytest(python, home, m.group(1));
    } finally {
      serverExit = stop(server);
    }
    traces = RunTraces.readDir(runs.resolve(RUN_ID));
  }

  /** The Python of the virtualenv named by {@code ravel.openai.venv}; fails (never skips) without it. */
  static Path venvPython() {
    String venv = System.getProperty("ravel.openai.venv", "");
    if (venv.isBlank() || venv.startsWith("${")) {
      fail("system property ravel.openai.venv is not set: run the integration tests with scripts/test-all.sh"
          + " (it installs the OpenAI client with scripts/setup-openai-client.sh and passes"
          + " -Dravel.openai.venv=<its virtualenv>)");
    }
    Path python = Path.of(venv, "bin", "python");
    if (!Files.isExecutable(python)) {
      fail("ravel.openai.venv=" + venv + " has no bin/python: run scripts/test-all.sh"
          + " (or scripts/setup-openai-client.sh, and pass the path it prints)");
    }
    return python;
  }

  static void runPytest(Path python, Path home, String url) throws IOException, InterruptedException {
    Path out = dir.resolve("pytest-out.txt");
    Path test = home.resolve("integration-tests/src/test/python/test_openai_client.py");
    ProcessBuilder pb = new ProcessBuilder(python.toString(), "-m", "pytest", "-q", "-p", "no:cacheprovider",
        test.toString())
        .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(out.toFile());
    Map<String, String> env = pb.environment();
    env.clear();
    env.putAll(TestEnv.clean());
    env.put("RAVEL_SERVE_URL", url);
    env.put("RAVEL_TEST_TRACE_ID", TRACE_ID);
    env.put("RAVEL_TEST_PARENT_ID", PARENT_ID);
    env.put("RAVEL_TEST_TRACED_REQUEST_ID", TRACED_REQUEST_ID);
    env.put("RAVEL_TEST_ROOT_REQUEST_ID", ROOT_REQUEST_ID);
    env.put("PYTHONDONTWRITEBYTECODE", "1");
    env.put("NO_PROXY", "127.0.0.1");
    env.put("no_proxy", "127.0.0.1");
    Process p = pb.start();
    if (!p.waitFor(180, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      p.waitFor(20, TimeUnit.SECONDS);
      pytestExit = -1;
    } else {
      pytestExit = p.exitValue();
    }
    pytestOutput = Files.readString(out, StandardCharsets.UTF_8);
  }

  /** SIGTERM to the server's PID, then a bounded wait; SIGKILL only if it does not end. Its exit code. */
  static int stop(Process p) throws InterruptedException {
    if (!p.isAlive()) {
      return p.exitValue();
    }
    p.destroy(); // our own child, not yet reaped: its PID names it still
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      p.waitFor(20, TimeUnit.SECONDS);
      return -1;
    }
    return p.exitValue();
  }

  @AfterAll
  static void noServerLeft() {
    if (server != null && server.isAlive()) {
      server.destroyForcibly(); // our own child, not yet reaped
    }
  }

  static String serverOutput() throws IOException {
    return "stdout:\n" + Files.readString(serverOut, StandardCharsets.UTF_8) + "\nstderr:\n"
        + Files.readString(serverErr, StandardCharsets.UTF_8);
  }

  static List<SpanRecord> llmRequests() {
    return traces.named("llm_request");
  }

  static String requestId(SpanRecord s) {
    Object id = s.attribute(EngineNames.REQUEST_ID);
    return id == null ? "" : id.toString();
  }

  static Set<String> choiceIds(String requestId, int n) {
    return IntStream.range(0, n).mapToObj(i -> requestId + "-" + i).collect(Collectors.toSet());
  }

  @Test
  void pytest_passesAgainstRavelServe() {
    assertThat(pytestExit).as("pytest (exit %s, -1 = timed out):\n%s", pytestExit, pytestOutput).isZero();
    assertThat(pytestOutput).contains("passed").doesNotContain("skipped");
  }

  @Test
  void serve_stopsOnSigtermAndFlushesItsSpans() throws IOException {
    // 143 = ended by SIGTERM after the shutdown hook ran (stop HTTP, close engine, flush telemetry)
    assertThat(serverExit).as(serverOutput()).isIn(0, 143);
    assertThat(Files.readString(serverErr, StandardCharsets.UTF_8)).as(serverOutput()).doesNotContain("Exception");
    assertThat(traces.problems()).isEmpty();
    assertThat(llmRequests()).as("spans of the server").isNotEmpty()
        .allSatisfy(s -> assertThat(s.role()).isEqualTo("inference_server"))
        .allSatisfy(s -> assertThat(s.runId()).isEqualTo(RUN_ID));
  }

  @Test
  void llmRequest_everySpanIsServerKindWithARequestId() {
    assertThat(llmRequests()).isNotEmpty().allSatisfy(s -> {
      assertThat(s.kind()).as("kind of %s", s.spanId()).isEqualTo(SPAN_KIND_SERVER);
      assertThat(requestId(s)).as("gen_ai.request.id of %s", s.spanId()).isNotBlank();
    });
  }

  @Test
  void llmRequest_withTraceparentIsChildOfTheCallersSpan() {
    List<SpanRecord> inTrace = llmRequests().stream().filter(s -> s.traceId().equals(TRACE_ID)).toList();
    assertThat(inTrace).as("llm_request spans in trace %s", TRACE_ID).hasSize(TRACED_CHOICES)
        .allSatisfy(s -> assertThat(s.parentSpanId()).isEqualTo(PARENT_ID));
    assertThat(inTrace.stream().map(OpenAiClientIT::requestId).collect(Collectors.toSet()))
        .isEqualTo(choiceIds(TRACED_REQUEST_ID, TRACED_CHOICES));
    // and nothing else of the server joined the caller's trace: the requests and their lifecycle children
    Set<String> requests = inTrace.stream().map(SpanRecord::spanId).collect(Collectors.toSet());
    List<SpanRecord> others = traces.byTrace().get(TRACE_ID).stream()
        .filter(s -> !s.name().equals(SpanNames.LLM_REQUEST)).toList();
    assertThat(others).isNotEmpty().allSatisfy(s -> {
      assertThat(LIFECYCLE).as("child %s", s.name()).contains(s.name());
      assertThat(requests).as("parent of %s", s.name()).contains(s.parentSpanId());
    });
    assertThat(inTrace).allSatisfy(r -> assertThat(others.stream().filter(c -> c.parentSpanId().equals(r.spanId()))
        .map(SpanRecord::name).toList()).as("children of %s", requestId(r))
        .startsWith(SpanNames.LLM_REQUEST_QUEUED, SpanNames.LLM_REQUEST_PREFILL)
        .contains(SpanNames.LLM_REQUEST_DECODE));
  }

  @Test
  void llmRequest_withoutTraceparentIsARootInATraceOfItsOwn() {
    List<SpanRecord> roots = llmRequests().stream()
        .filter(s -> requestId(s).startsWith(ROOT_REQUEST_ID + "-")).toList();
    assertThat(roots.stream().map(OpenAiClientIT::requestId).collect(Collectors.toSet()))
        .isEqualTo(choiceIds(ROOT_REQUEST_ID, ROOT_CHOICES));
    Map<String, List<SpanRecord>> byTrace = traces.byTrace();
    assertThat(roots).hasSize(ROOT_CHOICES).allSatisfy(s -> {
      assertThat(s.isRoot()).as("%s has no parent (got '%s')", requestId(s), s.parentSpanId()).isTrue();
      assertThat(s.traceId()).isNotEqualTo(TRACE_ID);
      assertThat(byTrace.get(s.traceId())).as("spans of trace %s", s.traceId())
          .allSatisfy(other -> assertThat(other.spanId().equals(s.spanId())
              || other.parentSpanId().equals(s.spanId()) && LIFECYCLE.contains(other.name()))
              .as("%s in the trace of %s", other.name(), requestId(s)).isTrue());
    });
  }
}
