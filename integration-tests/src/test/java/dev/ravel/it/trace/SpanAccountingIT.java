package dev.ravel.it.trace;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.traces.RunTraces;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run exporting to files and to an OTLP backend that goes down after step 3 (a real HTTP receiver on
 * loopback, stopped): a dead backend does not hold the driver up, its exit after the last step stays bounded
 * by the telemetry's shutdown timeout (with a wide margin for a loaded machine, see {@link #EXIT_BOUND_SECONDS}),
 * and every span is accounted for, exporter by exporter: ended = exported + failed + dropped, the file's
 * exported count is what the files hold and the backend's is exactly what the receiver answered 200 for.
 */
final class SpanAccountingIT {
  private static final int STEPS = 8;
  /** The run's telemetry.shutdown_timeout_ms (the default, set explicitly: the exit bound derives from it). */
  private static final long SHUTDOWN_TIMEOUT_MS = 5_000;
  /**
   * A hang guard on the driver's exit after its last step: one common flush deadline of the shutdown timeout
   * for every process, an actor's reply waited on up to 2 s beyond it (DriverSession's REPLY_GRACE_MS), then
   * the disconnect from Ray and the JVM's exit, typically about 7 s in all; ten times the flush budget and
   * two minutes more. What it guards is that a dead backend does not make the exit wait on it indefinitely
   * (retries, connect attempts); how fast a loaded machine tears a JVM and a Ray driver down is not asserted
   * (the figure is printed).
   */
  private static final long EXIT_BOUND_SECONDS = 10 * (SHUTDOWN_TIMEOUT_MS + 2_000) / 1000 + 120;

  @TempDir
  Path tmp;

  @Test
  void backendDownMidRun_everySpanIsCountedPerExporterAndTheDriverStillExits()
      throws Exception {
    Path runs = tmp.resolve("runs");
    Path out = tmp.resolve("driver.out");
    long received;
    long lastStepSeen;
    Process driver;
    try (OtlpHttpSink sink = new OtlpHttpSink()) {
      Map<String, String> env = new HashMap<>(SharedRayHead.env());
      env.put("OTEL_EXPORTER_OTLP_ENDPOINT", sink.baseUrl());
      env.put("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
      Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
      ProcessBuilder pb = new ProcessBuilder(home.resolve("bin/ravel").toString(), "run",
          home.resolve("examples/grpo-sync.yaml").toString(), "grpo.steps=" + STEPS, "grpo.prompts_per_step=8",
          "telemetry.exporter=both", "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=1.0",
          "telemetry.runs_dir=" + runs, "telemetry.run_id=accounting",
          "telemetry.shutdown_timeout_ms=" + SHUTDOWN_TIMEOUT_MS).redirectErrorStream(true)
          .redirectOutput(out.toFile());
      pb.environment().clear();
      pb.environment().putAll(env);
      driver = pb.start();
      RavelCommand.awaitOutput(out, driver, Pattern.compile("step   3/"), "step   3/", 240);
      // the backend goes down: exports fail from now on. close() answers the requests already being handled
      // first and keeps only the spans of requests answered 200, so what it holds now is final and is
      // exactly what the exporters were told was taken
      sink.close();
      received = sink.spans().size();
      RavelCommand.awaitOutput(out, driver, Pattern.compile("step   " + STEPS + "/"), "/" + STEPS, 240);
      lastStepSeen = System.nanoTime();
    }
    assertThat(driver.waitFor(EXIT_BOUND_SECONDS, TimeUnit.SECONDS)).as("the driver exits").isTrue();
    double exitSeconds = (System.nanoTime() - lastStepSeen) / 1e9;
    String text = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(driver.exitValue()).as(text).isZero();
    // the terminal has Ravel's own account of the dead backend (the spans line), not the SDK's SEVERE records,
    // which went to the driver log
    assertThat(text).doesNotContain("SEVERE").contains("failed");
    java.util.regex.Matcher line = Pattern.compile("(?m)^spans: .*$").matcher(text);
    System.out.printf("SpanAccountingIT: driver exited %.1f s after its last step; %s%n", exitSeconds,
        line.find() ? line.group() : "(no spans line)");

    Path runDir = runs.resolve("accounting");
    JsonNode tel = new ObjectMapper().readTree(runDir.resolve("run.json").toFile()).get("telemetry");
    assertThat(tel.get("unreported_actors")).isEmpty();
    JsonNode spans = tel.get("spans");
    long ended = spans.get("ended").asLong();
    assertThat(ended).isPositive();
    for (String exporter : List.of("file", "otlp")) {
      JsonNode e = spans.get("exporters").get(exporter);
      assertThat(e.get("exported").asLong() + e.get("failed").asLong() + e.get("dropped").asLong())
          .as(exporter + ": exported + failed + dropped").isEqualTo(ended);
    }
    // the file holds exactly what its exporter says it exported, in every process
    long inFiles = RunTraces.readDir(runDir).spans().size();
    assertThat(spans.get("exporters").get("file").get("exported").asLong()).isEqualTo(inFiles);
    // and, with its own export queue, it lost nothing to the dead backend
    assertThat(spans.get("exporters").get("file").get("exported").asLong()).isEqualTo(ended);
    // the backend got exactly what OTLP says it exported (the sink keeps only requests it answered 200, and
    // nothing after it went down), and the rest was lost visibly
    JsonNode otlp = spans.get("exporters").get("otlp");
    assertThat(otlp.get("exported").asLong()).isEqualTo(received);
    assertThat(otlp.get("failed").asLong() + otlp.get("dropped").asLong()).isPositive();
    // per process the same holds, and the processes add up to the totals
    long endedSum = 0;
    for (var p : (Iterable<Map.Entry<String, JsonNode>>) tel.get("processes")::fields) {
      JsonNode s = p.getValue();
      endedSum += s.get("ended").asLong();
      for (String exporter : List.of("file", "otlp")) {
        JsonNode e = s.get("exporters").get(exporter);
        assertThat(e.get("exported").asLong() + e.get("failed").asLong() + e.get("dropped").asLong())
            .as(p.getKey() + " " + exporter).isEqualTo(s.get("ended").asLong());
      }
    }
    assertThat(endedSum).isEqualTo(ended);
    assertThat(text).containsPattern("spans: " + ended + " ended = \\d+ exported \\+ 0 failed \\+ \\d+ dropped \\(file\\); "
        + ended + " ended = " + otlp.get("exported").asLong() + " exported \\+");
  }
}
