package dev.ravel.telemetry.view;

import static dev.ravel.telemetry.view.TestSpans.COLLECTOR;
import static dev.ravel.telemetry.view.TestSpans.DRIVER;
import static dev.ravel.telemetry.view.TestSpans.WORKER_1;
import static dev.ravel.telemetry.view.TestSpans.span;
import static dev.ravel.telemetry.view.TestSpans.tid;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.traces.SpanRecord;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

final class PerfettoTraceTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A producer in the collector (with two overlapping, unnested calls) and a driver step linking to it. */
  private static List<SpanRecord> run() {
    String a = tid(11);
    String b = tid(12);
    List<SpanRecord> out = new ArrayList<>();
    out.add(span(a, 1, 0, "rl.grpo.generation", 0, 50).in(COLLECTOR).build());
    out.add(span(a, 2, 1, "rl.vllm.generate", 1, 30).in(COLLECTOR).build());
    out.add(span(a, 3, 1, "rl.vllm.generate", 10, 45).in(COLLECTOR).build()); // overlaps 2 without nesting
    out.add(span(a, 4, 2, "rl.worker.generate_async", 2, 28).in(WORKER_1).build());
    out.add(span(b, 5, 0, "rl.grpo.step", 60, 100).link(a, 2).link(a, 3).build());
    out.add(span(b, 6, 5, "rl.grpo.policy_training", 70, 95).error("boom").build());
    return out;
  }

  @Test
  void render_isTraceEventJsonWithATrackPerProcessASlicePerSpanAndPairedFlows() throws Exception {
    JsonNode root = JSON.readTree(PerfettoTrace.render(run()));
    List<JsonNode> events = new ArrayList<>();
    root.get("traceEvents").forEach(events::add);

    TraceEventFormat.check(root);
    List<JsonNode> slices = events.stream().filter(e -> e.get("ph").asText().equals("X")).toList();
    assertThat(slices).hasSize(6);
    assertThat(events.stream().filter(e -> e.get("ph").asText().equals("M")
        && e.get("name").asText().equals("process_name")).map(e -> e.get("args").get("name").asText()))
        .containsExactlyInAnyOrder("trajectory_collector/400", "generation_worker/201", "driver/100");
    JsonNode step = slices.stream().filter(e -> e.get("name").asText().equals("rl.grpo.step")).findFirst().orElseThrow();
    assertThat(step.get("ts").asDouble()).isEqualTo(60_000.0); // microseconds from the first span
    assertThat(step.get("dur").asDouble()).isEqualTo(40_000.0);
    assertThat(step.get("pid").asInt()).isEqualTo(100);
    assertThat(events.stream().filter(e -> e.get("ph").asText().equals("s"))).hasSize(2);
    assertThat(root.get("otherData").get("flows").asInt()).isEqualTo(2);
    JsonNode failed = slices.stream().filter(e -> e.get("name").asText().equals("rl.grpo.policy_training"))
        .findFirst().orElseThrow();
    assertThat(failed.get("args").get("status").asText()).isEqualTo("ERROR: boom");
  }

  @Test
  void render_overlappingCallsInOneProcessGoToSeparateThreads() throws Exception {
    JsonNode root = JSON.readTree(PerfettoTrace.render(run()));
    List<JsonNode> generates = new ArrayList<>();
    root.get("traceEvents").forEach(e -> {
      if (e.get("ph").asText().equals("X") && e.get("name").asText().equals("rl.vllm.generate")) {
        generates.add(e);
      }
    });
    assertThat(generates).hasSize(2);
    assertThat(generates.get(0).get("tid").asInt()).isNotEqualTo(generates.get(1).get("tid").asInt());
  }

  @Test
  void render_samePidOnTwoNodes_getsTwoTracks() throws Exception {
    List<SpanRecord> spans = List.of(span(tid(1), 1, 0, "a", 0, 1).in(DRIVER).build(),
        span(tid(1), 2, 1, "b", 0, 1).in(TestSpans.process("generation_worker", 100)).build());

    JsonNode root = JSON.readTree(PerfettoTrace.render(spans));

    TraceEventFormat.check(root);
    List<Integer> pids = new ArrayList<>();
    root.get("traceEvents").forEach(e -> {
      if (e.get("ph").asText().equals("X")) {
        pids.add(e.get("pid").asInt());
      }
    });
    assertThat(pids).doesNotHaveDuplicates();
  }

  @Test
  void render_syncAndAsyncSteps_passTheFormatCheckWithASlicePerSpanAndAFlowPerLink() throws Exception {
    List<SpanRecord> spans = TestSpans.all();

    JsonNode root = JSON.readTree(PerfettoTrace.render(spans));

    TraceEventFormat.check(root);
    long slices = 0;
    for (JsonNode e : root.get("traceEvents")) {
      slices += e.get("ph").asText().equals("X") ? 1 : 0;
    }
    assertThat(slices).isEqualTo(spans.size());
    java.util.Set<String> ids = new java.util.HashSet<>();
    spans.forEach(s -> ids.add(s.spanId()));
    long links = spans.stream().flatMap(s -> s.links().stream()).filter(l -> ids.contains(l.spanId())).count();
    assertThat(links).isPositive();
    assertThat(root.get("otherData").get("flows").asLong()).isEqualTo(links);
  }

  @Test
  void render_noSpans_isAnEmptyTrace() throws Exception {
    JsonNode root = JSON.readTree(PerfettoTrace.render(List.of()));
    assertThat(root.get("traceEvents")).isEmpty();
  }
}
