package dev.ravel.telemetry.view;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class RunReportTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  Path dir;

  private static String stepLine(int step, double reward, double kl, String traceId) {
    return "{\"step\":" + step + ",\"mode\":\"sync\",\"rewardMean\":" + reward + ",\"rewardStd\":0.1,\"kl\":" + kl
        + ",\"loss\":0.01,\"clipFraction\":0.0,\"tokens\":100,\"tokensPerSecond\":500.0,\"stepSeconds\":0.1,"
        + "\"phases\":{\"generation\":0.05},\"weightVersion\":" + step + ",\"trajectories\":8,\"droppedForAge\":0,"
        + "\"rayCalls\":4,\"traceId\":\"" + traceId + "\"}";
  }

  /** One export of the cumulative engine totals: a queue-time histogram and a preemption counter. */
  private static String engineExport(long timeNanos, double queueSum, long queueCount, long preemptions) {
    return "{\"resourceMetrics\":[{\"resource\":{\"attributes\":[]},\"scopeMetrics\":[{\"metrics\":["
        + "{\"name\":\"rl.engine.queue_time\",\"histogram\":{\"dataPoints\":[{\"timeUnixNano\":\"" + timeNanos
        + "\",\"count\":\"" + queueCount + "\",\"sum\":" + queueSum + "}]}},"
        + "{\"name\":\"rl.engine.preemptions\",\"sum\":{\"dataPoints\":[{\"timeUnixNano\":\"" + timeNanos
        + "\",\"asInt\":\"" + preemptions + "\"}]}}]}]}]}";
  }

  @Test
  void read_aRunWithoutSpansDrawsOneRowPerLoggedStepAndTheEngineDeltas() throws Exception {
    Files.writeString(dir.resolve("steps.jsonl"), stepLine(1, 0.1, 0.0, "a") + "\n" + stepLine(2, 0.3, 0.02, "b")
        + "\n" + stepLine(3, 0.5, 0.04, "c") + "\n{\"step\":4,\"mode\":\"sy"); // a run killed mid-write
    Files.writeString(dir.resolve("metrics-generation_worker-7.jsonl"), engineExport(10_000_000_000L, 0.5, 10, 1)
        + "\n" + engineExport(20_000_000_000L, 2.5, 30, 1) + "\n");

    RunReport report = RunReport.read(dir);

    assertThat(report.stepCount()).isEqualTo(3);
    assertThat(report.problems()).singleElement().asString().contains("steps.jsonl:4: unreadable line");
    JsonNode data = report.data();
    assertThat(data.get("steps")).extracting(s -> s.get("step").asInt()).containsExactly(1, 2, 3);
    assertThat(data.get("steps")).extracting(s -> s.get("reward_mean").asDouble()).containsExactly(0.1, 0.3, 0.5);
    JsonNode queue = data.get("engine").get("queue_time").get(0);
    assertThat(queue.get("name").asText()).isEqualTo("generation_worker-7");
    // first export: 0.5 s over 10 requests; second: (2.5 - 0.5) s over 20 more
    assertThat(queue.get("points")).extracting(p -> p.get(1).asDouble()).containsExactly(0.05, 0.1);
    assertThat(data.get("engine").get("preemptions").get(0).get("points")).extracting(p -> p.get(1).asDouble())
        .containsExactly(1.0, 0.0);
    String page = report.render();
    assertThat(page).doesNotContain("class=\"waterfall-doc\"");
    assertThat(page).contains("<tr class=\"step-row\" tabindex=\"0\" data-step=\"3\">");
  }

  @Test
  void render_embedsEachStepsWaterfallCompressedAndTheGoodputOfItsSpans() throws Exception {
    RunView run = RunView.of(TestSpans.all());
    List<dev.ravel.telemetry.runs.StepRecord> steps =
        List.of(dev.ravel.telemetry.runs.StepRecord.parse(stepLine(5, 0.2, 0.01, TestSpans.SYNC_TRACE)));

    RunReport report = RunReport.of("run-test", steps, run);
    String page = report.render();

    JsonNode row = report.data().get("steps").get(0);
    assertThat(row.get("step").asLong()).isEqualTo(5);
    assertThat(row.get("spans").asInt()).isEqualTo(run.step(5).orElseThrow().spanCount());
    double goodput = 0;
    for (String b : List.of("productive", "overhead", "idle", "wasted")) {
      goodput += row.get("goodput").get(b).asDouble();
    }
    assertThat(goodput).isCloseTo(0.1, org.assertj.core.data.Offset.offset(1e-9)); // the 100 ms root, all of it
    Matcher m = Pattern.compile("<script type=\"application/gzip\\+base64\" class=\"waterfall-doc\" data-step=\"(\\d+)\">"
        + "([A-Za-z0-9+/=]+)</script>").matcher(page);
    int docs = 0;
    while (m.find()) {
      docs++;
      String html = new String(new GZIPInputStream(new ByteArrayInputStream(Base64.getDecoder().decode(m.group(2))))
          .readAllBytes(), StandardCharsets.US_ASCII);
      assertThat(html).startsWith("<!DOCTYPE html>").contains("step " + m.group(1));
    }
    assertThat(docs).isEqualTo(run.steps().size());
    assertThat(report.render(1)).containsOnlyOnce("class=\"waterfall-doc\"");
    assertThat(page.chars().allMatch(c -> c < 0x7f)).as("ASCII").isTrue();
    assertThat(page).contains("default-src 'none'").doesNotContainPattern("(src|href|action)=[\"']?(https?:)?//");
  }

  @Test
  void data_refitStages_theLongestSpanOfEachStageUnderTheStepsRefitWithItsBytes() {
    String t = TestSpans.tid(40);
    List<dev.ravel.telemetry.traces.SpanRecord> spans = List.of(
        TestSpans.span(t, 1, 0, "rl.grpo.step", 0, 50).attr("rl.step", 2L).attr("rl.mode", "sync").build(),
        TestSpans.span(t, 2, 1, "rl.grpo.refit", 5, 15).build(),
        TestSpans.span(t, 3, 2, "rl.refit.put", 5.5, 6.5).attr("rl.refit.bytes", 400L).build(),
        TestSpans.span(t, 4, 2, "rl.worker.update_weights", 7, 14).in(TestSpans.WORKER_1).build(),
        TestSpans.span(t, 5, 4, "rl.refit.fetch", 7, 8).in(TestSpans.WORKER_1).attr("rl.refit.bytes", 400L).build(),
        TestSpans.span(t, 6, 4, "rl.refit.load", 8, 10).in(TestSpans.WORKER_1).attr("rl.refit.bytes", 400L).build(),
        TestSpans.span(t, 7, 2, "rl.worker.update_weights", 7, 14).in(TestSpans.WORKER_2).build(),
        TestSpans.span(t, 8, 7, "rl.refit.fetch", 7, 9).in(TestSpans.WORKER_2).attr("rl.refit.bytes", 400L).build(),
        TestSpans.span(t, 9, 7, "rl.refit.load", 9, 12).in(TestSpans.WORKER_2).attr("rl.refit.bytes", 400L).build(),
        // a stage outside the refit (say a checkpoint's gather) is not the refit's
        TestSpans.span(t, 10, 1, "rl.grpo.checkpointing", 40, 45).build(),
        TestSpans.span(t, 11, 10, "rl.refit.gather", 41, 44).attr("rl.refit.bytes", 999L).build());
    RunReport report = RunReport.of("run-refit", List.of(dev.ravel.telemetry.runs.StepRecord.parse(stepLine(2, 0.2, 0.0, t))),
        RunView.of(spans));

    JsonNode row = report.data().get("steps").get(0);
    assertThat(row.get("refit_s").asDouble()).isCloseTo(0.010, org.assertj.core.data.Offset.offset(1e-9));
    JsonNode stages = row.get("refit");
    assertThat(stages.fieldNames()).toIterable().containsExactlyInAnyOrder("rl.refit.put", "rl.refit.fetch",
        "rl.refit.load");
    assertThat(stages.get("rl.refit.put").asDouble()).isCloseTo(0.001, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(stages.get("rl.refit.fetch").asDouble()).isCloseTo(0.002, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(stages.get("rl.refit.load").asDouble()).isCloseTo(0.003, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(row.get("refit_bytes").get("rl.refit.load").asLong()).isEqualTo(400L);
    assertThat(report.data().get("refit_stages")).extracting(JsonNode::asText).startsWith("rl.refit.gather",
        "rl.refit.put", "rl.refit.fetch");
    assertThat(report.render()).contains("id=\"chart-refit\"");
  }

  @Test
  void data_stepsWithTheEnginesOverThem_onePointPerStepAndThePerStepCharts() throws Exception {
    String engine = ",\"engine\":{\"requests\":12,\"queueTimeMean\":0.25,\"preemptions\":3,\"runningMean\":1.5,"
        + "\"waitingMean\":0.5,\"kvUsageMean\":0.125}}";
    String line = stepLine(1, 0.1, 0.0, "a");
    Files.writeString(dir.resolve("steps.jsonl"), line.substring(0, line.length() - 1) + engine + "\n");

    RunReport report = RunReport.read(dir);
    JsonNode row = report.data().get("steps").get(0);
    assertThat(row.get("engine_requests").asLong()).isEqualTo(12);
    assertThat(row.get("engine_queue_s").asDouble()).isEqualTo(0.25);
    assertThat(row.get("engine_preemptions").asLong()).isEqualTo(3);
    assertThat(row.get("engine_running").asDouble()).isEqualTo(1.5);
    assertThat(row.get("engine_kv").asDouble()).isEqualTo(0.125);
    assertThat(report.render()).contains("Engine queue time, mean per step (s)").contains("id=\"chart-engine-load\"");
    // a line without the engines (an older run) keeps the per-export charts
    Files.writeString(dir.resolve("steps.jsonl"), line + "\n");
    assertThat(RunReport.read(dir).render()).contains("Engine queue time, mean per interval (s)");
  }

  @Test
  void render_runWithoutSteps_listsItsTracesEachWithItsWaterfall() {
    RunReport report = RunReport.of("app", List.of(), RunView.of(OtherTracesTest.spans().stream()
        .filter(x -> !x.traceId().equals(TestSpans.SYNC_TRACE)).toList()));

    String page = report.render();

    assertThat(report.stepCount()).isZero();
    assertThat(report.traceCount()).isEqualTo(2);
    assertThat(page).contains("<table id=\"traces\">").contains("data-step=\"t1\"").contains("data-step=\"t2\"")
        .contains("app.pipeline").contains(OtherTracesTest.PIPELINE).contains("Click a trace to see its waterfall");
    assertThat(page.split("class=\"waterfall-doc\"", -1)).hasSize(3);
    assertThat(RunReport.of("app", List.of(), RunView.of(OtherTracesTest.spans().stream()
        .filter(x -> !x.traceId().equals(TestSpans.SYNC_TRACE)).toList())).render(1)
        .split("class=\"waterfall-doc\"", -1)).hasSize(2);
  }

  @Test
  void render_namesInTheDataCannotCloseTheScriptOrInjectMarkup() throws Exception {
    Files.writeString(dir.resolve("steps.jsonl"), stepLine(1, 0.1, 0.0, "a") + "\n");
    Files.writeString(dir.resolve("run.json"), "{\"run_id\":\"</script><b>x\",\"mode\":\"<i>sync\","
        + "\"status\":\"succeeded\",\"started\":\"2026-11-29T08:00:00Z\",\"finished\":\"2026-11-29T08:05:30Z\"}");

    String page = RunReport.read(dir).render();

    assertThat(page).doesNotContain("</script><b>").doesNotContain("<i>sync").contains("&lt;i&gt;sync");
  }

  @Test
  void read_aFolderWithoutStepsOrSpansIsAClearError() {
    assertThatThrownBy(() -> RunReport.read(dir)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no steps").hasMessageContaining(dir.toString());
    assertThatThrownBy(() -> RunReport.read(dir.resolve("nope"))).hasMessageContaining("no such run folder");
  }
}
