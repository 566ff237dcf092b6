package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ravel trace RUN --startup} through the command line's own entry point, on a run folder whose span files
 * hold a start-up trace (the driver's, a worker's, a trainer's) and a launched server's loading as a trace of its own.
 */
final class TraceStartupTest {
  @TempDir
  static Path runs;

  static final String TRACE = "5".repeat(32);
  static final String SERVER_TRACE = "6".repeat(32);
  static final long T0 = 1_767_225_600_000_000_000L;
  static final long MS = 1_000_000L;

  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private PrintStream savedErr;
  private PrintStream savedOut;

  /** One OTLP JSON line of a process's span file: {@code spans} as {trace, id, parent, name, startMs, endMs}. */
  static String line(String role, long pid, List<Object[]> spans) {
    StringBuilder sb = new StringBuilder("{\"resourceSpans\":[{\"resource\":{\"attributes\":[")
        .append("{\"key\":\"service.name\",\"value\":{\"stringValue\":\"ravel\"}},")
        .append("{\"key\":\"rl.run.id\",\"value\":{\"stringValue\":\"startup-run\"}},")
        .append("{\"key\":\"rl.process.role\",\"value\":{\"stringValue\":\"").append(role).append("\"}}");
    if (pid > 0) {
      sb.append(",{\"key\":\"process.pid\",\"value\":{\"intValue\":\"").append(pid).append("\"}}");
    } else {
      sb.append(",{\"key\":\"process.parent_pid\",\"value\":{\"stringValue\":\"").append(-pid).append("\"}}");
    }
    sb.append("]},\"scopeSpans\":[{\"scope\":{\"name\":\"dev.ravel\"},\"spans\":[");
    for (int i = 0; i < spans.size(); i++) {
      Object[] s = spans.get(i);
      sb.append(i == 0 ? "" : ",").append("{\"traceId\":\"").append(s[0]).append("\",\"spanId\":\"").append(s[1])
          .append("\",\"parentSpanId\":\"").append(s[2]).append("\",\"name\":\"").append(s[3])
          .append("\",\"kind\":1,\"startTimeUnixNano\":\"").append(T0 + (long) (int) s[4] * MS)
          .append("\",\"endTimeUnixNano\":\"").append(T0 + (long) (int) s[5] * MS).append("\"}");
    }
    return sb.append("]}]}]}\n").toString();
  }

  static String id(int n) {
    return String.format("%016x", n);
  }

  @BeforeAll
  static void aRunFolder() throws IOException {
    Path run = Files.createDirectories(runs.resolve("startup-run"));
    Files.writeString(run.resolve("traces-driver-100.jsonl"), line("driver", 100, List.<Object[]>of(
        new Object[] {TRACE, id(1), "", "rl.run.startup", 0, 9000},
        new Object[] {TRACE, id(2), id(1), "rl.run.ray", 0, 2000},
        new Object[] {TRACE, id(3), id(1), "rl.run.actors.generation_worker", 2100, 8900},
        new Object[] {TRACE, id(4), id(1), "rl.run.actors.policy_trainer", 2100, 5000})));
    Files.writeString(run.resolve("traces-generation_worker-201.jsonl"), line("generation_worker", 201, List.<Object[]>of(
        new Object[] {TRACE, id(10), id(3), "rl.worker.start_backend", 3000, 8800},
        new Object[] {TRACE, id(11), id(10), "rl.worker.launch_server", 3001, 8000})));
    Files.writeString(run.resolve("traces-policy_trainer-300.jsonl"), line("policy_trainer", 300, List.<Object[]>of(
        new Object[] {TRACE, id(20), id(4), "rl.trainer.load_model", 3500, 4900})));
    Files.writeString(run.resolve("traces-inference_server-otlp-4000.jsonl"), line("inference_server", -201, List.<Object[]>of(
        new Object[] {SERVER_TRACE, id(90), "", "Overall Loading", 3100, 7500},
        new Object[] {SERVER_TRACE, id(91), id(90), "Load weights", 4000, 5000})));
    Path old = Files.createDirectories(runs.resolve("old-run"));
    Files.writeString(old.resolve("traces-driver-100.jsonl"), line("driver", 100, List.<Object[]>of(
        new Object[] {"7".repeat(32), id(1), "", "rl.grpo.step", 0, 10})));
  }

  @BeforeEach
  void capture() {
    savedErr = System.err;
    savedOut = System.out;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restore() {
    System.setErr(savedErr);
    System.setOut(savedOut);
  }

  private int trace(String... args) {
    List<String> all = new java.util.ArrayList<>(List.of("trace"));
    all.addAll(List.of(args));
    all.addAll(List.of("--runs-dir", runs.toString(), "--plain"));
    return RavelCli.execute(Map.of(), all.toArray(String[]::new));
  }

  @Test
  void startup_drawsTheStartupWithTheServersLoadingUnderItsWorker() {
    int code = trace("startup-run", "--startup", "--width", "160");

    String text = out.toString(StandardCharsets.UTF_8);
    assertThat(code).as(err.toString(StandardCharsets.UTF_8)).isZero();
    assertThat(text).contains("rl.run.startup").contains("duration 9.00s").contains("rl.run.ray")
        .contains("rl.worker.start_backend").contains("rl.trainer.load_model").contains("Load weights")
        .contains("1 by the launching worker's pid (process.parent_pid)");
    List<String> rows = text.lines().filter(l -> l.contains("rl.worker.launch_server") || l.contains("Overall Loading"))
        .toList();
    assertThat(rows).hasSize(2);
    assertThat(rows.get(0)).contains("rl.worker.launch_server"); // the server's loading is drawn under the launch
    assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void startup_jsonListsEachStartupsSpans_htmlWritesItsWaterfall() throws IOException {
    assertThat(trace("startup-run", "--startup", "--json")).isZero();
    JsonNode ups = new ObjectMapper().readTree(out.toString(StandardCharsets.UTF_8));
    assertThat(ups).hasSize(1);
    assertThat(ups.get(0).get("trace_id").asText()).isEqualTo(TRACE);
    assertThat(ups.get(0).get("span_list")).extracting(n -> n.get("name").asText())
        .contains("rl.run.startup", "rl.worker.launch_server", "Overall Loading", "Load weights");

    Path html = runs.resolve("startup.html");
    out.reset();
    assertThat(trace("startup-run", "--startup", "--html", html.toString())).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).contains("wrote " + html.toAbsolutePath())
        .contains("the start-up of run startup-run");
    assertThat(Files.readString(html)).contains("data-span-name=\"rl.run.startup\"")
        .contains("data-span-name=\"Overall Loading\"");
  }

  @Test
  void trace_theStartupsTraceIdDrawsItToo() {
    assertThat(trace("startup-run", "--trace", TRACE.substring(0, 8), "--width", "160")).isZero();

    assertThat(out.toString(StandardCharsets.UTF_8)).contains("rl.run.startup").contains("Overall Loading");
  }

  @Test
  void startup_aRunWithoutOne_saysSoAndFails() {
    assertThat(trace("old-run", "--startup")).isEqualTo(1);

    assertThat(err.toString(StandardCharsets.UTF_8)).contains("run old-run has no start-up trace")
        .contains("rl.run.startup");
    assertThat(out.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void startup_withStep_isAUsageErrorNamingStartup() {
    assertThat(trace("startup-run", "--startup", "--step", "1")).isEqualTo(2);

    assertThat(err.toString(StandardCharsets.UTF_8)).contains("--startup").contains("--step");
    assertThat(out.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void runList_saysHowLongTheStartupTook() {
    assertThat(trace("startup-run", "--width", "120")).isZero();

    assertThat(out.toString(StandardCharsets.UTF_8)).contains("start-up 9.00s").contains("(its waterfall: --startup)");
  }
}
