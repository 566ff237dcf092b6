package dev.ravel.it.trace;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.OtlpHttpSink;
import dev.ravel.it.support.RavelCommand;
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
 * loopback, stopped): the driver still exits within 15 s of its last step, and every span is accounted for,
 * exporter by exporter: ended = exported + failed + dropped, the file's exported count is what the files hold
 * and the backend's is what the receiver got.
 */
final class SpanAccountingIT {
  private static final int STEPS = 8;

  @TempDir
  Path tmp;

  @Test
  void backendDownMidRun_everySpanIsCountedPerExporterAndTheDriverExitsWithin15s() throws Exception {
    Path runs = tmp.resolve("runs");
    Path out = tmp.resolve("driver.out");
    long received;
    long lastStepSeen;
    Process driver;
    try (OtlpHttpSink sink = new OtlpHttpSink()) {
      Map<String, String> env = new HashMap<>(TestEnv.clean());
      env.put("OTEL_EXPORTER_OTLP_ENDPOINT", sink.baseUrl());
      env.put("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
      Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
      ProcessBuilder pb = new ProcessBuilder(home.resolve("bin/ravel").toString(), "run",
          home.resolve("examples/grpo-sync.yaml").toString(), "grpo.steps=" + STEPS, "grpo.prompts_per_step=8",
          "telemetry.exporter=both", "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=1.0",
          "telemetry.runs_dir=" + runs, "telemetry.run_id=accounting").redirectErrorStream(true)
          .redirectOutput(out.toFile());
      pb.environment().clear();
      pb.environment().putAll(env);
      driver = pb.start();
      RavelCommand.awaitOutput(out, driver, Pattern.compile("step   3/"), "step   3/", 240);
      sink.close(); // the backend goes down: exports are refused from now on
      received = sink.spans().size();
      RavelCommand.awaitOutput(out, driver, Pattern.compile("step   " + STEPS + "/"), "/" + STEPS, 240);
      lastStepSeen = System.nanoTime();
    }
    assertThat(driver.waitFor(120, TimeUnit.SECONDS)).isTrue();
    double exitSeconds = (System.nanoTime() - lastStepSeen) / 1e9;
    String text = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(driver.exitValue()).as(text).isZero();
    java.util.regex.Matcher line = Pattern.compile("(?m)^spans: .*$").matcher(text);
    System.out.printf("SpanAccountingIT: driver exited %.1f s after its last step; %s%n", exitSeconds,
        line.find() ? line.group() : "(no spans line)");
    assertThat(exitSeconds).as("seconds from the last step to the driver's exit\n" + text).isLessThan(15.0);

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
    // the backend got what OTLP says it exported, and lost the rest visibly
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
