package dev.ravel.it.trace;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.logging.Level;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;

/**
 * {@code ravel runs} and {@code ravel trace} on a real run, as a user runs them: the step table, a step's
 * terminal waterfall, the HTML waterfall in a real headless Chromium, and the bad-input cases. One run made by
 * {@code bin/ravel run} serves every test; {@code ravel diff} compares it with a second run that differs from it
 * in one key. One Chromium serves every test that reads a page.
 */
final class TraceCommandIT {
  static final String RUN_ID = "it-trace-cli";

  @TempDir
  static Path dir;
  static Path runs;
  /** The spans of run {@link #RUN_ID}, read from its files. */
  static RunTraces traces;
  private static ChromeDriver sharedBrowser;

  @BeforeAll
  static void aRun() throws Exception {
    runs = dir.resolve("runs");
    RavelCommand.Result made = RavelCommand.run(SharedRayHead.env(), 600, run(RUN_ID, 2));
    assertThat(made.exitCode()).as("stdout:%n%s%nstderr:%n%s", made.stdout(), made.stderr()).isZero();
    traces = RunTraces.readDir(runs.resolve(RUN_ID));
  }

  /** {@code bin/ravel run} of a 3-step sync run, every engine request traced, with {@code workers} workers. */
  static String[] run(String runId, int workers) {
    return new String[] {"run", Path.of(System.getProperty("ravel.home"), "examples", "grpo-sync.yaml").toString(),
        "grpo.steps=3", "grpo.prompts_per_step=3", "grpo.group_size=3", "generation.workers=" + workers,
        "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=1.0", "telemetry.run_id=" + runId,
        "telemetry.runs_dir=" + runs};
  }

  @AfterAll
  static void done() {
    if (sharedBrowser != null) {
      sharedBrowser.quit();
    }
  }

  /**
   * {@code ravel ARGS} through the command line's own entry point in this JVM, its output captured (these
   * commands only read run folders; the launcher itself is checked through {@code bin/ravel} below and in
   * BadInputIT), which saves a JVM start per call.
   */
  static synchronized RavelCommand.Result ravel(String... args) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
    java.io.PrintStream savedOut = System.out;
    java.io.PrintStream savedErr = System.err;
    int code;
    try {
      System.setOut(new java.io.PrintStream(out, true, java.nio.charset.StandardCharsets.UTF_8));
      System.setErr(new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
      code = dev.ravel.driver.cli.RavelCli.execute(args);
    } finally {
      System.setOut(savedOut);
      System.setErr(savedErr);
    }
    return new RavelCommand.Result(code, out.toString(java.nio.charset.StandardCharsets.UTF_8),
        err.toString(java.nio.charset.StandardCharsets.UTF_8));
  }

  /** {@code bin/ravel ARGS} in a process of its own, as a user types it. */
  static RavelCommand.Result launched(String... args) throws Exception {
    return RavelCommand.run(TestEnv.clean(), 120, args);
  }

  @Test
  void trace_perfettoWritesTheWholeRunAsTraceEvents() throws Exception {
    Path out = dir.resolve("run.perfetto.json");
    RavelCommand.Result r = launched("trace", "it-trace-cli", "--runs-dir", runs.toString(), "--perfetto",
        out.toString());
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).contains("wrote " + out);
    com.fasterxml.jackson.databind.JsonNode root = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.toFile());
    java.util.List<com.fasterxml.jackson.databind.JsonNode> slices = new java.util.ArrayList<>();
    java.util.Set<String> processes = new java.util.HashSet<>();
    for (com.fasterxml.jackson.databind.JsonNode e : root.get("traceEvents")) {
      if (e.get("ph").asText().equals("X")) {
        slices.add(e);
      } else if (e.get("ph").asText().equals("M") && e.get("name").asText().equals("process_name")) {
        processes.add(e.get("args").get("name").asText());
      }
    }
    assertThat(slices).hasSize(traces.spans().size()).allSatisfy(e -> {
      assertThat(e.get("ts").isNumber() && e.get("dur").isNumber()).isTrue();
      assertThat(e.get("pid").asInt()).isPositive();
      assertThat(e.get("tid").asInt()).isPositive();
    });
    assertThat(processes).containsExactlyInAnyOrderElementsOf(
        traces.spans().stream().map(dev.ravel.telemetry.traces.SpanRecord::process).distinct().toList());
  }

  @Test
  void json_runsAndTraceGiveMachineReadableOutputNumberedAsTheProgressLine() throws Exception {
    com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
    RavelCommand.Result runsOut = ravel("runs", "--runs-dir", runs.toString(), "--json");
    assertThat(runsOut.exitCode()).as(runsOut.stderr()).isZero();
    com.fasterxml.jackson.databind.JsonNode list = json.readTree(runsOut.stdout());
    assertThat(list.isArray()).isTrue();
    assertThat(list).anySatisfy(r -> {
      assertThat(r.get("run_id").asText()).isEqualTo("it-trace-cli");
      assertThat(r.get("spans").asInt()).isEqualTo(traces.spans().size());
    });

    RavelCommand.Result traceOut = ravel("trace", "it-trace-cli", "--runs-dir", runs.toString(), "--json");
    assertThat(traceOut.exitCode()).as(traceOut.stderr()).isZero();
    com.fasterxml.jackson.databind.JsonNode t = json.readTree(traceOut.stdout());
    assertThat(t.get("steps")).extracting(x -> x.get("step").asInt()).containsExactly(1, 2, 3);
    assertThat(t.get("spans").asInt()).isEqualTo(traces.spans().size());
    assertThat(t.get("unconnected_spans").asInt()).isZero();

    RavelCommand.Result stepOut = ravel("trace", "it-trace-cli", "--runs-dir", runs.toString(), "--step", "2", "--json");
    assertThat(stepOut.exitCode()).as(stepOut.stderr()).isZero();
    com.fasterxml.jackson.databind.JsonNode st = json.readTree(stepOut.stdout());
    assertThat(st.get("step").asInt()).isEqualTo(2);
    assertThat(st.get("span_list")).hasSize(traces.byTrace().get(st.get("trace_id").asText()).size());
    assertThat(st.get("span_list").get(0).get("name").asText()).isEqualTo("rl.grpo.step");
  }

  @Test
  void trace_foldsTheEnginesRequestsUnlessExpanded() throws Exception {
    RavelCommand.Result folded = ravel("trace", "it-trace-cli", "--step", "2", "--runs-dir", runs.toString(),
        "--width", "160");
    RavelCommand.Result expanded = ravel("trace", "it-trace-cli", "--step", "2", "--runs-dir", runs.toString(),
        "--width", "160", "--expand");
    assertThat(folded.exitCode()).isZero();
    long requests = expanded.stdout().lines().filter(l -> l.matches(".*-llm_request\\s.*")).count();
    assertThat(requests).isGreaterThanOrEqualTo(3);
    assertThat(folded.stdout()).containsPattern("llm_request x\\d+ .* spans p50 .* max ");
    assertThat(folded.stdout().lines().filter(l -> l.matches(".*-llm_request\\s.*")).count()).isLessThan(requests);
  }

  @Test
  void runs_listsTheRun() throws Exception {
    RavelCommand.Result r = ravel("runs", "--runs-dir", runs.toString());
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).contains("it-trace-cli");
  }

  @Test
  void trace_withoutStepShowsOneLinePerStepInPlainText() throws Exception {
    RavelCommand.Result r = ravel("trace", "it-trace-cli", "--runs-dir", runs.toString(), "--width", "100");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).doesNotContain("\u001b[").contains("goodput");
    assertThat(r.stdout().lines().filter(l -> l.matches("\\s+[1-3]\\s+.*"))).hasSize(3);
    assertThat(r.stdout().lines()).allSatisfy(l -> assertThat(l.length()).isLessThanOrEqualTo(100));
  }

  @Test
  void trace_stepShowsItsWaterfallWithEveryProcess() throws Exception {
    RavelCommand.Result r = ravel("trace", "it-trace-cli", "--step", "1", "--runs-dir", runs.toString(), "--width", "120");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).contains("rl.grpo.step", "rl.vllm.generate", "rl.worker.generate", "llm_request",
        "rl.trainer.train", "generation_worker", "policy_trainer");
    assertThat(r.stdout().lines()).allSatisfy(l -> assertThat(l.length()).isLessThanOrEqualTo(120));
  }

  @Test
  void trace_unknownRunIdIsOneClearLine() throws Exception {
    RavelCommand.Result r = ravel("trace", "no-such-run", "--runs-dir", runs.toString());
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.stderr().strip()).startsWith("ravel: no run 'no-such-run'").doesNotContain("\n").doesNotContain("Exception");
  }

  @Test
  void trace_stepThatDoesNotExistIsOneClearLine() throws Exception {
    RavelCommand.Result r = ravel("trace", "it-trace-cli", "--step", "42", "--runs-dir", runs.toString());
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.stderr().strip()).isEqualTo("ravel: run it-trace-cli has no step 42 (steps 1..3)");
  }

  @Test
  void trace_corruptLineIsReportedWithFileAndLineAndTheRestIsShown() throws Exception {
    Path copy = dir.resolve("corrupt-runs").resolve("it-trace-cli");
    Files.createDirectories(copy);
    Path victim = null;
    try (Stream<Path> files = Files.list(runs.resolve("it-trace-cli"))) {
      for (Path f : files.toList()) {
        Files.copy(f, copy.resolve(f.getFileName()));
        if (f.getFileName().toString().startsWith("traces-driver")) {
          victim = copy.resolve(f.getFileName());
        }
      }
    }
    long lines = Files.readAllLines(victim).size();
    Files.writeString(victim, "{\"resourceSpans\":[{\"resource\":{\"attrib\n", StandardOpenOption.APPEND);
    RavelCommand.Result r = ravel("trace", "it-trace-cli", "--runs-dir", copy.getParent().toString(), "--width", "100");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stderr()).contains(victim.getFileName() + ":" + (lines + 1) + ": unreadable line");
    assertThat(r.stdout().lines().filter(l -> l.matches("\\s+[1-3]\\s+.*"))).hasSize(3);
  }

  @Test
  void trace_unreachableJaegerIsOneClearLine() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      port = s.getLocalPort();
    }
    RavelCommand.Result r = ravel("trace", "it-trace-cli", "--source", "jaeger", "--jaeger", "http://127.0.0.1:" + port,
        "--runs-dir", runs.toString());
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.stderr().strip()).isEqualTo("ravel: Jaeger is not reachable at http://127.0.0.1:" + port
        + " (connection refused)");
  }

  /**
   * Two runs through {@code bin/ravel run} (each writes its run.json) that differ in one key, the class's run
   * (2 workers) and one more with 1: {@code ravel diff} names that key alone and compares their phases.
   */
  @Test
  void diff_twoRunsThatDifferInOneKey_namesItAndComparesEveryPhase() throws Exception {
    RavelCommand.Result made = RavelCommand.run(SharedRayHead.env(), 600, run("it-diff-b", 1));
    assertThat(made.exitCode()).as(made.stderr()).isZero();
    RavelCommand.Result r = ravel("diff", RUN_ID, "it-diff-b", "--runs-dir", runs.toString());
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).contains("A = " + RUN_ID).contains("B = it-diff-b")
        .contains("config keys that differ (1):").containsPattern("generation\\.workers\\s+A: 2\\s+B: 1");
    // every step has these phases; the first has no refit (its weights are the initial ones)
    for (String phase : List.of("step", "data_processing", "generation", "reward_calculation", "policy_training")) {
      assertThat(r.stdout()).as("phase %s", phase)
          .containsPattern("(?m)^" + phase + "\\s+\\S+\\s+\\S+\\s+\\d+\\.\\d\\dx\\s+3/3$");
    }
    assertThat(r.stdout()).containsPattern("(?m)^refit\\s+\\S+\\s+\\S+\\s+\\d+\\.\\d\\dx\\s+2/2$");
    RavelCommand.Result missing = ravel("diff", "it-trace-cli", "no-such-run", "--runs-dir", runs.toString());
    assertThat(missing.exitCode()).isEqualTo(1);
    assertThat(missing.stderr()).contains("no run 'no-such-run'");

    // the same two runs overlaid: ravel report A B, read in Chromium
    Path html = Path.of(System.getProperty("ravel.home"), "integration-tests", "target", "report-" + RUN_ID + "-vs-b.html");
    RavelCommand.Result report = ravel("report", RUN_ID, "it-diff-b", "--runs-dir", runs.toString(), "--html",
        html.toString());
    assertThat(report.exitCode()).as(report.stderr()).isZero();
    assertThat(report.stdout()).contains("2 runs: " + RUN_ID + ", it-diff-b; 1 config keys differ");
    ChromeDriver browser = browser();
    browser.get(html.toUri().toString());
    assertThat(browser.findElements(By.cssSelector("#run-legend .run-entry")).stream()
        .map(e -> e.getText().trim())).containsExactly(RUN_ID, "it-diff-b");
    List<WebElement> keys = browser.findElements(By.cssSelector("#config-diff tr.config-key"));
    assertThat(keys).hasSize(1);
    assertThat(keys.get(0).findElements(By.tagName("td")).stream().map(e -> e.getText().trim()))
        .containsExactly("generation.workers", "2", "1");
    for (String curve : List.of("chart-reward", "chart-kl", "chart-loss", "chart-grad-norm", "chart-entropy",
        "chart-length", "chart-step-time", "chart-tokens")) {
      List<WebElement> points = browser.findElements(By.cssSelector("#" + curve + " .point"));
      assertThat(points.stream().map(p -> p.getAttribute("data-series")).distinct()).as(curve)
          .containsExactly(RUN_ID, "it-diff-b");
      for (String id : List.of(RUN_ID, "it-diff-b")) {
        assertThat(points.stream().filter(p -> id.equals(p.getAttribute("data-series")))
            .map(p -> Long.valueOf(p.getAttribute("data-step")))).as(curve + " of " + id).containsExactly(1L, 2L, 3L);
      }
      assertThat(browser.findElements(By.cssSelector("#" + curve + " polyline.line"))).as(curve).hasSize(2);
    }
    List<LogEntry> errors = browser.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue()).toList();
    assertThat(errors).isEmpty();
  }

  /**
   * A run of a user's own actors has no GRPO steps: {@code ravel trace} lists its traces and draws the one
   * {@code --trace} names, as text and as HTML that Chromium loads without errors. The spans are written by this
   * JVM's own telemetry to a run folder of their own (file exporter, as every Ravel process writes them).
   */
  @Test
  void trace_runWithoutStepsListsItsTracesAndDrawsOneInTheTerminalAndInChromium() throws Exception {
    dev.ravel.telemetry.config.TelemetryConfig config = dev.ravel.telemetry.config.TelemetryConfig.builder()
        .runId("it-trace-app").runsDir(runs).build();
    String traceId;
    try (dev.ravel.telemetry.sdk.ProcessTelemetry t = dev.ravel.telemetry.sdk.ProcessTelemetry.builder(config)
        .role("driver").start()) {
      try (var root = t.spans().start(dev.ravel.telemetry.config.SpanGroup.STEP, "app.pipeline")) {
        traceId = root.spanContext().getTraceId();
        try (var hop = t.spans().start(dev.ravel.telemetry.config.SpanGroup.STEP, "app.hop")) {
          try (var inner = t.spans().start(dev.ravel.telemetry.config.SpanGroup.STEP, "app.inner")) {
            inner.error("refused");
          }
        }
      }
      try (var other = t.spans().start(dev.ravel.telemetry.config.SpanGroup.STEP, "app.other")) {
        other.event("alone");
      }
      assertThat(t.flush(Duration.ofSeconds(30))).isTrue();
    }

    RavelCommand.Result listed = ravel("runs", "--runs-dir", runs.toString(), "--width", "160");
    assertThat(listed.stdout().lines().filter(l -> l.startsWith("it-trace-app")))
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING).contains("traces 2");
    RavelCommand.Result list = ravel("trace", "it-trace-app", "--runs-dir", runs.toString(), "--plain");
    assertThat(list.exitCode()).as(list.stderr()).isZero();
    assertThat(list.stdout()).contains("2 trace(s), no GRPO steps").contains("app.pipeline").contains("app.other")
        .contains(traceId);
    RavelCommand.Result text = ravel("trace", "it-trace-app", "--runs-dir", runs.toString(), "--plain", "--trace",
        traceId.substring(0, 8));
    assertThat(text.exitCode()).as(text.stderr()).isZero();
    assertThat(text.stdout()).contains("app.pipeline").contains("app.hop").contains("app.inner")
        .doesNotContain("app.other").doesNotContain("step -1");
    RavelCommand.Result unknown = ravel("trace", "it-trace-app", "--runs-dir", runs.toString(), "--trace", "ffff");
    assertThat(unknown.exitCode()).isEqualTo(1);
    assertThat(unknown.stderr()).contains("has no trace ffff");

    Path html = Path.of(System.getProperty("ravel.home"), "integration-tests", "target", "waterfall-app.html");
    RavelCommand.Result r = ravel("trace", "it-trace-app", "--runs-dir", runs.toString(), "--trace", traceId,
        "--html", html.toString());
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    ChromeDriver browser = browser();
    browser.get(html.toUri().toString());
    assertThat(browser.findElements(By.cssSelector(".span-row")).stream().map(e -> e.getAttribute("data-span-name")))
        .containsExactlyInAnyOrder("app.pipeline", "app.hop", "app.inner");
    List<LogEntry> errors = browser.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue()).toList();
    assertThat(errors).isEmpty();

    // the run report degrades to the list of traces, each row opening its waterfall
    Path report = html.resolveSibling("report-app.html");
    RavelCommand.Result rep = ravel("report", "it-trace-app", "--runs-dir", runs.toString(), "--html",
        report.toString());
    assertThat(rep.exitCode()).as(rep.stderr()).isZero();
    assertThat(rep.stdout()).contains("no steps, 2 traces");
    browser.get(report.toUri().toString());
    List<WebElement> rows = browser.findElements(By.cssSelector("tr.trace-row"));
    assertThat(rows).hasSize(2);
    assertThat(rows.get(0).getText()).contains("app.pipeline").contains(traceId);
    rows.get(0).click();
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!"t1".equals(browser.findElement(By.id("waterfall-frame")).getAttribute("data-loaded"))
        && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertThat(browser.findElement(By.id("waterfall-frame")).getAttribute("data-loaded")).isEqualTo("t1");
    assertThat(browser.findElement(By.id("waterfall-title")).getText()).isEqualTo("Trace 1 waterfall");
    assertThat(browser.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue())).isEmpty();
  }

  @Test
  void html_loadsInHeadlessChromiumWithoutErrorsAndARowShowsItsAttributes() throws Exception {
    Path target = Path.of(System.getProperty("ravel.home"), "integration-tests", "target");
    Path html = target.resolve("waterfall-step1.html");
    RavelCommand.Result r = ravel("trace", "it-trace-cli", "--step", "1", "--html", html.toString(),
        "--runs-dir", runs.toString());
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    String traceId = traces.named("rl.grpo.step").stream()
        .filter(s -> Long.valueOf(1).equals(s.attributes().get("rl.step"))).findFirst().orElseThrow().traceId();
    List<SpanRecord> stepSpans = traces.byTrace().get(traceId);

    ChromeDriver browser = browser();
    browser.get(html.toUri().toString());
    List<WebElement> rows = browser.findElements(By.cssSelector(".span-row"));
    assertThat(rows).hasSize(stepSpans.size());
    assertThat(rows.stream().map(e -> e.getAttribute("data-span-name")))
        .contains("rl.grpo.step", "rl.vllm.generate", "rl.worker.generate", "llm_request", "rl.trainer.train");

    WebElement root = browser.findElement(By.cssSelector(".span-row[data-span-name='rl.grpo.step']"));
    String id = root.getAttribute("data-span-id");
    WebElement detail = browser.findElement(By.cssSelector(".span-detail[data-span-id='" + id + "']"));
    assertThat(detail.isDisplayed()).isFalse();
    root.click();
    assertThat(detail.isDisplayed()).isTrue();
    assertThat(detail.findElements(By.cssSelector(".attr-key")).stream().map(WebElement::getText))
        .contains("rl.step", "rl.mode");

    WebElement generate = browser.findElement(By.cssSelector(".span-row[data-span-name='rl.vllm.generate']"));
    WebElement worker = browser.findElement(By.cssSelector(".span-row[data-span-name='rl.worker.generate']"));
    assertThat(worker.isDisplayed()).isTrue();
    generate.findElement(By.cssSelector(".toggle")).click();
    assertThat(worker.isDisplayed()).isFalse();

    Files.write(target.resolve("waterfall-step1.png"), ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES));
    List<LogEntry> errors = browser.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue()).toList();
    assertThat(errors).isEmpty();
  }

  @Test
  void report_hasOnePointPerStepOnEveryCurveAndAStepRowOpensItsWaterfall() throws Exception {
    Path target = Path.of(System.getProperty("ravel.home"), "integration-tests", "target");
    Path html = target.resolve("report-it-trace-cli.html");
    RavelCommand.Result r = ravel("report", "it-trace-cli", "--runs-dir", runs.toString(), "--html", html.toString());
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).contains("wrote " + html).contains("3 steps of run it-trace-cli");
    String page = Files.readString(html, StandardCharsets.US_ASCII);
    assertThat(page).doesNotContainPattern("(src|href|action)=[\"']?(https?:)?//").contains("Content-Security-Policy");
    List<Long> stepNumbers = traces.named("rl.grpo.step").stream()
        .map(s -> (Long) s.attributes().get("rl.step")).sorted().toList();
    assertThat(stepNumbers).containsExactly(1L, 2L, 3L); // numbered from 1, as the progress line counts them

    ChromeDriver browser = browser();
    browser.get(html.toUri().toString());
    for (String curve : List.of("chart-reward", "chart-kl", "chart-loss", "chart-grad-norm", "chart-learning-rate",
        "chart-entropy")) {
      List<WebElement> points = browser.findElements(By.cssSelector("#" + curve + " .point"));
      assertThat(points).as(curve).hasSize(3);
      assertThat(points.stream().map(p -> Long.valueOf(p.getAttribute("data-step")))).as(curve)
          .containsExactlyElementsOf(stepNumbers);
    }
    assertThat(browser.findElements(By.cssSelector("#chart-clip .point"))).as("clip low, high and dual per step")
        .hasSize(9);
    assertThat(browser.findElements(By.cssSelector("#chart-length .point"))).as("mean and max length per step")
        .hasSize(6);
    assertThat(browser.findElements(By.cssSelector("#chart-lag .point"))).as("mean and max policy lag per step")
        .hasSize(6);
    assertThat(browser.findElements(By.cssSelector("#chart-pipeline .point"))).as("buffer and in flight per step")
        .hasSize(6);
    List<WebElement> bars = browser.findElements(By.cssSelector("#chart-step-time .bar-part"));
    assertThat(bars.stream().map(b -> b.getAttribute("data-step")).distinct()).hasSize(3);
    assertThat(bars.stream().map(b -> b.getAttribute("data-bucket"))).contains("productive", "overhead");
    // the engines over each step: one point per step on the step axis
    for (String engine : List.of("chart-engine-queue", "chart-engine-preemptions")) {
      assertThat(browser.findElements(By.cssSelector("#" + engine + " .point")).stream()
          .map(p -> Long.valueOf(p.getAttribute("data-step")))).as(engine).containsExactlyElementsOf(stepNumbers);
    }
    assertThat(browser.findElements(By.cssSelector("#chart-engine-load .point"))).as("running, waiting, KV per step")
        .hasSize(9);
    // the refit panel: steps 2 and 3 refit (the first serves the initial weights), each with its whole time
    // and the stages of the Java path: put (driver), fetch and load (the slowest worker's)
    List<WebElement> refit = browser.findElements(By.cssSelector("#chart-refit .point"));
    assertThat(refit.stream().map(p -> p.getAttribute("data-series")).distinct())
        .containsExactlyInAnyOrder("refit (whole)", "put", "fetch", "load");
    assertThat(refit).hasSize(8).allSatisfy(p -> assertThat(p.getAttribute("data-step")).isIn("2", "3"));
    List<WebElement> rows = browser.findElements(By.cssSelector("tr.step-row"));
    assertThat(rows).hasSize(3);

    WebElement second = browser.findElement(By.cssSelector("tr.step-row[data-step='2']"));
    second.click();
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!"2".equals(browser.findElement(By.id("waterfall-frame")).getAttribute("data-loaded"))
        && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertThat(browser.findElement(By.id("waterfall-frame")).getAttribute("data-loaded")).as("waterfall of step 2")
        .isEqualTo("2");
    assertThat(second.getAttribute("class")).contains("selected");
    assertThat(browser.findElement(By.id("waterfall-title")).getText()).contains("Step 2");
    // the completions step 2 kept, as the run folder's samples.jsonl has them
    List<dev.ravel.telemetry.runs.SampleRecord> kept = Files.readAllLines(runs.resolve("it-trace-cli")
        .resolve("samples.jsonl")).stream().map(dev.ravel.telemetry.runs.SampleRecord::parse)
        .filter(x -> x.step() == 2).toList();
    assertThat(kept).isNotEmpty();
    List<WebElement> sampleRows = browser.findElements(By.cssSelector("#samples tr.sample-row"));
    assertThat(sampleRows).hasSize(kept.size());
    assertThat(sampleRows.get(0).findElements(By.tagName("td")).get(2).getText()).isEqualTo(kept.get(0).prompt());
    assertThat(browser.findElement(By.id("samples-title")).getText()).isEqualTo("Sample completions of step 2");
    String traceId = traces.named("rl.grpo.step").stream()
        .filter(s -> Long.valueOf(2).equals(s.attributes().get("rl.step"))).findFirst().orElseThrow().traceId();
    browser.switchTo().frame(browser.findElement(By.id("waterfall-frame")));
    List<WebElement> spanRows = browser.findElements(By.cssSelector(".span-row"));
    assertThat(spanRows).hasSize(traces.byTrace().get(traceId).size());
    assertThat(browser.findElement(By.cssSelector(".meta-item[data-key='trace-id'] dd")).getText()).contains(traceId);
    browser.switchTo().defaultContent();

    Files.write(target.resolve("report-it-trace-cli.png"), ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES));
    List<LogEntry> errors = browser.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue()).toList();
    assertThat(errors).isEmpty();
  }

  /**
   * The class's Chromium, started on first use and quit after the last test; what its log holds from an earlier
   * page is read off first, so that a test's check of the log sees its own pages' messages only.
   */
  static ChromeDriver browser() throws IOException {
    if (sharedBrowser == null) {
      sharedBrowser = chromium();
    }
    sharedBrowser.manage().logs().get(LogType.BROWSER);
    return sharedBrowser;
  }

  /** A Chromium of its own (WaterfallBrowserIT's); quit it. */
  static ChromeDriver chromium() throws IOException {
    return dev.ravel.it.support.Chromium.start();
  }
}
