package dev.ravel.workers.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.workers.model.WeightsFile;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

@Timeout(120) // a hang guard only
final class ServeCommandTest {
  private static final Pattern LISTENING = Pattern.compile("ravel serve: listening on http://127\\.0\\.0\\.1:(\\d+)\n");

  @TempDir
  Path dir;

  @Test
  void serve_exitWithParent_stopsOnceTheParentIsGone() throws Exception {
    Process parent = new ProcessBuilder("sleep", "30").start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Path weights = WeightsFile.write(dir.resolve("w.bin"), TestServer.weights().withVersion(5));
    CompletableFuture<Integer> exit = serve(out, "--port", "0", "--model-name", "m", "--weights", weights.toString(), "--exit-with-parent",
        Long.toString(parent.pid()), "--telemetry", "exporter=none", "--telemetry", "enabled=false");
    int port = awaitPort(out, exit);
    HttpClient client = HttpClient.newHttpClient();
    HttpRequest health = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health")).build();
    assertThat(client.send(health, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    HttpRequest models = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/models")).build();
    assertThat(client.send(models, HttpResponse.BodyHandlers.ofString()).body()).contains("\"id\":\"m\"");

    parent.destroy();
    parent.waitFor();

    // it checks its parent every second: the 60 s bound is a hang guard for a loaded machine, not a speed claim
    assertThat(exit.get(60, TimeUnit.SECONDS)).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).matches(LISTENING);
    try {
      HttpClient.newHttpClient().send(health, HttpResponse.BodyHandlers.ofString());
      throw new AssertionError("still serving after the parent died");
    } catch (ConnectException expected) {
      // the port is closed
    }
  }

  @Test
  void serve_spanCounts_writtenOnStopAndEqualToTheSpansInItsFile() throws Exception {
    Process parent = new ProcessBuilder("sleep", "30").start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Path counts = ServeCommand.spanCountsFile(dir, ProcessHandle.current().pid()); // served in this JVM
    CompletableFuture<Integer> exit = serve(out, "--port", "0", "--model-name", "m", "--exit-with-parent", Long.toString(parent.pid()),
        "--span-counts-dir", dir.toString(), "--telemetry", "runs_dir=" + dir, "--telemetry", "run_id=serve-counts",
        "--telemetry", "exporter=file", "--telemetry", "engine_tracing=true", "--telemetry",
        "engine_sample_ratio=1.0");
    int port = awaitPort(out, exit);
    HttpClient client = HttpClient.newHttpClient();
    for (int i = 0; i < 3; i++) {
      HttpRequest completion = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\"1+2=\",\"max_tokens\":4}"))
          .build();
      assertThat(client.send(completion, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    }
    assertThat(counts).as("written only once it stops").doesNotExist();

    parent.destroy();
    parent.waitFor();
    assertThat(exit.get(60, TimeUnit.SECONDS)).isZero();

    @SuppressWarnings("unchecked")
    Map<String, Object> json = TestServer.JSON.readValue(counts.toFile(), Map.class);
    dev.ravel.telemetry.sdk.ExportStats stats = dev.ravel.telemetry.sdk.ExportStats.fromJson(json);
    long inFile;
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(dir.resolve("serve-counts"))) {
      inFile = files.filter(f -> f.getFileName().toString().startsWith("traces-")).mapToLong(f -> {
        try (java.util.stream.Stream<String> lines = java.nio.file.Files.lines(f)) {
          return lines.filter(l -> !l.isBlank()).mapToLong(ServeCommandTest::spansInLine).sum();
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }).sum();
    }
    assertThat(stats.ended()).as("three requests, each at least its llm_request span").isGreaterThanOrEqualTo(3);
    assertThat(stats.exporters()).containsOnlyKeys("file");
    assertThat(stats.exporters().get("file").exported()).isEqualTo(stats.ended()).isEqualTo(inFile);
    assertThat(stats.addsUp()).isTrue();
  }

  @Test
  void serve_badInput_exitsWithCode2AndOneLine() {
    ServeCommand cmd = new ServeCommand();
    cmd.env = Map.of();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CommandLine cl = ServeMain.commandLine(cmd).setErr(new java.io.PrintWriter(err, true));

    int code = cl.execute("--port", "0", "--weights", dir.resolve("none.bin").toString(), "--telemetry",
        "exporter=none");

    assertThat(code).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).startsWith("ravel serve: weights file " + dir.resolve("none.bin"))
        .hasLineCount(1);
  }

  @Test
  void serve_unknownTelemetryKey_exitsWithCode2NamingIt() {
    ServeCommand cmd = new ServeCommand();
    cmd.env = Map.of();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CommandLine cl = ServeMain.commandLine(cmd).setErr(new java.io.PrintWriter(err, true));

    assertThat(cl.execute("--port", "0", "--telemetry", "colour=red")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).startsWith(
        "ravel serve: invalid configuration: --telemetry colour: unknown key");
  }

  @Test
  void serve_traceSamplerParentBased_tracesExactlyTheRequestsItsCallersSampled() throws Exception {
    Process parent = new ProcessBuilder("sleep", "30").start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    CompletableFuture<Integer> exit = serve(out, "--port", "0", "--model-name", "m", "--exit-with-parent",
        Long.toString(parent.pid()), "--trace-sampler", "parentbased", "--telemetry", "runs_dir=" + dir,
        "--telemetry", "run_id=serve-parent", "--telemetry", "exporter=file", "--telemetry", "engine_tracing=true",
        "--telemetry", "engine_sample_ratio=0", "--telemetry", "engine_slow_request_ms=0");
    int port = awaitPort(out, exit);
    HttpClient client = HttpClient.newHttpClient();
    // sampled with n = 2, not sampled, not sampled with n = 3, sampled, none (a root: sampled, as vLLM's rule)
    String[] flags = {"01", "00", "00", "01", null};
    int[] n = {2, 1, 3, 1, 1};
    for (int i = 0; i < flags.length; i++) {
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\"1+2=\",\"max_tokens\":3,\"n\":"
              + n[i] + "}"));
      if (flags[i] != null) {
        b.header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333" + i + "-" + flags[i]);
      }
      assertThat(client.send(b.build(), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    }
    parent.destroy();
    parent.waitFor();
    assertThat(exit.get(60, TimeUnit.SECONDS)).isZero();

    long spans;
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(dir.resolve("serve-parent"))) {
      spans = files.filter(f -> f.getFileName().toString().startsWith("traces-")).mapToLong(f -> {
        try {
          String text = java.nio.file.Files.readString(f);
          return text.split("\"name\":\"llm_request\"", -1).length - 1;
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }).sum();
    }
    assertThat(spans).as("2 + 1 + 1 choices of the sampled requests, though slow requests are 0 ms").isEqualTo(4);
  }

  @Test
  void serve_traceSamplerUnknown_isAUsageErrorNamingIt() {
    ServeCommand cmd = new ServeCommand();
    cmd.env = Map.of();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CommandLine cl = ServeMain.commandLine(cmd).setErr(new java.io.PrintWriter(err, true));

    assertThat(cl.execute("--port", "0", "--trace-sampler", "vllm")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).startsWith(
        "--trace-sampler: unknown value 'vllm' (valid: ravel, parentbased)");
  }

  @Test
  void serve_portOutOfRange_isAUsageError() {
    ServeCommand cmd = new ServeCommand();
    cmd.env = Map.of();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CommandLine cl = ServeMain.commandLine(cmd).setErr(new java.io.PrintWriter(err, true));

    assertThat(cl.execute("--port", "70000")).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).startsWith("--port: must be in [0, 65535] (got 70000)");
  }

  @Test
  void telemetryConfig_launchedByAWorker_readsTheWorkersVariablesAndOverridesWin() {
    Map<String, String> env = Map.of("RAVEL_TELEMETRY_RUN_ID", "run-1", "RAVEL_TELEMETRY_ENGINE_TRACING", "true",
        "RAVEL_TELEMETRY_EXPORTER", "otlp", "RAVEL_OTLP_ENDPOINT", "http://127.0.0.1:4999",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:5999");

    TelemetryConfig c = ServeTelemetry.config(env, Map.of("engine_sample_ratio", "0.25"));

    assertThat(ServeTelemetry.launchedByWorker(env)).isTrue();
    assertThat(c.runId()).isEqualTo("run-1");
    assertThat(c.engineTracing()).isTrue();
    assertThat(c.engineSampleRatio()).isEqualTo(0.25);
    assertThat(c.exporter()).isEqualTo(ExporterKind.OTLP);
    assertThat(ServeTelemetry.otlp(env).endpoint().toString()).startsWith("http://127.0.0.1:4999");
    assertThat(ServeTelemetry.config(env, Map.of("exporter", "none")).exporter()).isEqualTo(ExporterKind.NONE);
  }

  @Test
  void telemetryConfig_standalone_resolvesLikeTheDriverWithANewRunId() {
    Map<String, String> env = Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:5999",
        "RAVEL_TELEMETRY_ENGINE_TRACING", "true");

    TelemetryConfig c = ServeTelemetry.config(env, Map.of());

    assertThat(ServeTelemetry.launchedByWorker(env)).isFalse();
    assertThat(c.runId()).isNotBlank();
    assertThat(c.engineTracing()).isTrue();
    assertThat(ServeTelemetry.otlp(env).endpoint().toString()).startsWith("http://127.0.0.1:5999");
  }

  /** The spans of one OTLP JSON line ({@code {"resourceSpans":[{"scopeSpans":[{"spans":[...]}]}]}}). */
  private static long spansInLine(String line) {
    try {
      long n = 0;
      for (com.fasterxml.jackson.databind.JsonNode rs : TestServer.JSON.readTree(line).path("resourceSpans")) {
        for (com.fasterxml.jackson.databind.JsonNode ss : rs.path("scopeSpans")) {
          n += ss.path("spans").size();
        }
      }
      return n;
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** {@code ravel serve args} in this JVM, its listening line into {@code out}; its exit code when it ends. */
  private static CompletableFuture<Integer> serve(ByteArrayOutputStream out, String... args) {
    ServeCommand cmd = new ServeCommand();
    cmd.env = Map.of();
    cmd.out = new PrintStream(out, true, StandardCharsets.UTF_8);
    return CompletableFuture.supplyAsync(() -> ServeMain.commandLine(cmd).execute(args));
  }

  private static int awaitPort(ByteArrayOutputStream out, CompletableFuture<Integer> exit) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (System.nanoTime() < deadline) {
      Matcher m = LISTENING.matcher(out.toString(StandardCharsets.UTF_8));
      if (m.matches()) {
        return Integer.parseInt(m.group(1));
      }
      if (exit.isDone()) {
        throw new AssertionError("ravel serve ended with " + exit.join() + " before listening");
      }
      Thread.sleep(20);
    }
    throw new AssertionError("ravel serve did not print its listening line: " + out);
  }
}
