package dev.ravel.telemetry.sdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.Preset;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import io.opentelemetry.api.trace.Tracer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

final class ProcessTelemetryTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  Path runs;

  private TelemetryConfig config(ExporterKind exporter) {
    return TelemetryConfig.builder()
        .runId("run-42")
        .serviceName("ravel-test")
        .runsDir(runs)
        .exporter(exporter)
        .shutdownTimeout(Duration.ofSeconds(5))
        .build();
  }

  // ---------------------------------------------------------------- file exporter

  @Test
  void close_fileExporterWritesOtlpJsonLinesUnderTheRunFolder() throws IOException {
    long pid = ProcessHandle.current().pid();
    ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.FILE)).role("generation_worker")
        .resource(RavelAttributes.RAY_ACTOR_ID, "actor-7").start();
    try (ScopedSpan step = t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      step.set(RavelAttributes.STEP, 1L);
      t.spans().start(SpanGroup.GENERATION, SpanNames.GRPO_GENERATION).close();
      t.spans().start(SpanGroup.REWARD, SpanNames.GRPO_REWARD).close();
    }

    t.close();

    Path expected = runs.resolve("run-42").resolve("traces-generation_worker-" + pid + ".jsonl");
    assertThat(t.spanFile()).contains(expected);
    assertThat(expected).isRegularFile();
    List<JsonNode> spans = new ArrayList<>();
    List<JsonNode> resources = new ArrayList<>();
    for (String line : Files.readAllLines(expected)) {
      JsonNode root = JSON.readTree(line);
      assertThat(root.isObject()).as(line).isTrue();
      assertThat(root.has("resourceSpans")).as(line).isTrue();
      for (JsonNode rs : root.get("resourceSpans")) {
        resources.add(rs.get("resource"));
        for (JsonNode ss : rs.get("scopeSpans")) {
          assertThat(ss.path("scope").path("name").asText()).isEqualTo("dev.ravel");
          ss.get("spans").forEach(spans::add);
        }
      }
    }

    assertThat(spans).extracting(s -> s.get("name").asText())
        .containsExactlyInAnyOrder(SpanNames.GRPO_STEP, SpanNames.GRPO_GENERATION, SpanNames.GRPO_REWARD);
    for (JsonNode s : spans) {
      assertThat(s.get("traceId").asText()).matches("[0-9a-f]{32}");
      assertThat(s.get("spanId").asText()).matches("[0-9a-f]{16}");
      assertThat(s.get("startTimeUnixNano").isTextual()).as("startTimeUnixNano is a JSON string").isTrue();
      assertThat(s.get("startTimeUnixNano").asText()).matches("\\d+");
      assertThat(s.get("endTimeUnixNano").asText()).matches("\\d+");
    }
    JsonNode step = spans.stream().filter(s -> s.get("name").asText().equals(SpanNames.GRPO_STEP)).findFirst()
        .orElseThrow();
    assertThat(spans).filteredOn(s -> !s.get("name").asText().equals(SpanNames.GRPO_STEP))
        .allSatisfy(child -> {
          assertThat(child.get("traceId").asText()).isEqualTo(step.get("traceId").asText());
          assertThat(child.get("parentSpanId").asText()).isEqualTo(step.get("spanId").asText());
        });
    assertThat(resources).isNotEmpty().allSatisfy(r -> {
      Map<String, String> attrs = attributes(r);
      assertThat(attrs).containsEntry("service.name", "ravel-test")
          .containsEntry("rl.run.id", "run-42")
          .containsEntry("rl.process.role", "generation_worker")
          .containsEntry("ray.actor.id", "actor-7")
          .containsEntry("process.pid", Long.toString(pid));
    });

    ExportStats stats = t.stats();
    assertThat(stats.ended()).isEqualTo(3);
    assertThat(stats.exported()).isEqualTo(3);
    assertThat(stats.dropped()).isZero();
    assertThat(stats.failed()).isZero();
    assertThat(stats.pending()).isZero();
  }

  @Test
  void flush_makesSpansVisibleInTheFileBeforeClose() throws IOException {
    try (ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.FILE)).role("driver")
        .scheduleDelay(Duration.ofMinutes(5)).start()) {
      t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP).close();

      assertThat(t.flush(Duration.ofSeconds(5))).isTrue();

      assertThat(t.stats().exported()).isEqualTo(1);
      assertThat(Files.readString(t.spanFile().orElseThrow())).contains(SpanNames.GRPO_STEP);
    }
  }

  @Test
  void resource_namesTheRunAndTheRole() {
    try (ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.NONE)).role("driver").start()) {
      assertThat(t.role()).isEqualTo("driver");
      assertThat(t.resource().getAttribute(io.opentelemetry.api.common.AttributeKey.stringKey("service.name")))
          .isEqualTo("ravel-test");
      assertThat(t.resource().getAttribute(RavelAttributes.RUN_ID)).isEqualTo("run-42");
      assertThat(t.resource().getAttribute(RavelAttributes.PROCESS_ROLE)).isEqualTo("driver");
    }
  }

  @Test
  void close_fileLinesAreOtlpRequestsTheCollectorsProtobufJsonParserReads() throws Exception {
    ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.FILE)).role("driver")
        .metricInterval(Duration.ofMinutes(5)).start();
    try (ScopedSpan step = t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      step.set(RavelAttributes.STEP, 3L);
      t.spans().start(SpanGroup.GENERATION, SpanNames.GRPO_GENERATION).close();
    }
    t.openTelemetry().getMeter("dev.ravel").counterBuilder("rl.test.count").build().add(5);

    t.close();

    Path dir = runs.resolve("run-42");
    long pid = ProcessHandle.current().pid();
    List<io.opentelemetry.proto.trace.v1.Span> spans = new ArrayList<>();
    for (String line : Files.readAllLines(dir.resolve("traces-driver-" + pid + ".jsonl"))) {
      var req = io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.newBuilder();
      com.google.protobuf.util.JsonFormat.parser().merge(line, req);
      req.getResourceSpansList().forEach(rs -> rs.getScopeSpansList().forEach(ss -> spans.addAll(ss.getSpansList())));
    }
    assertThat(spans).extracting(io.opentelemetry.proto.trace.v1.Span::getName)
        .containsExactlyInAnyOrder(SpanNames.GRPO_STEP, SpanNames.GRPO_GENERATION);
    var stepSpan = spans.stream().filter(x -> x.getName().equals(SpanNames.GRPO_STEP)).findFirst().orElseThrow();
    var gen = spans.stream().filter(x -> x.getName().equals(SpanNames.GRPO_GENERATION)).findFirst().orElseThrow();
    assertThat(gen.getParentSpanId()).isEqualTo(stepSpan.getSpanId());
    // OTLP/JSON writes ids as hex (the Collector's pdata reads hex); a plain protobuf JSON parser takes the
    // same text as base64, so encoding its bytes back gives the hex text the file holds
    java.util.Base64.Encoder b64 = java.util.Base64.getEncoder();
    assertThat(b64.encodeToString(gen.getTraceId().toByteArray())).matches("[0-9a-f]{32}");
    assertThat(b64.encodeToString(gen.getSpanId().toByteArray())).matches("[0-9a-f]{16}");
    assertThat(stepSpan.getEndTimeUnixNano()).isGreaterThan(stepSpan.getStartTimeUnixNano());

    List<String> metricNames = new ArrayList<>();
    long sum = 0;
    for (String line : Files.readAllLines(dir.resolve("metrics-driver-" + pid + ".jsonl"))) {
      var req = io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest.newBuilder();
      com.google.protobuf.util.JsonFormat.parser().merge(line, req);
      for (var rm : req.getResourceMetricsList()) {
        for (var sm : rm.getScopeMetricsList()) {
          for (var m : sm.getMetricsList()) {
            metricNames.add(m.getName());
            if (m.getName().equals("rl.test.count")) {
              sum = m.getSum().getDataPoints(0).getAsInt();
            }
          }
        }
      }
    }
    assertThat(metricNames).contains("rl.test.count");
    assertThat(sum).isEqualTo(5);
  }

  @Test
  void resource_carriesTheConfiguredAttributesBelowRavelsOwn() {
    TelemetryConfig c = config(ExporterKind.NONE).toBuilder()
        .resourceAttributes(Map.of("deployment.environment.name", "staging", "k8s.cluster.name", "gpu-a"))
        .build();
    try (ProcessTelemetry t = ProcessTelemetry.builder(c).role("driver").start()) {
      assertThat(t.resource().getAttribute(io.opentelemetry.api.common.AttributeKey.stringKey(
          "deployment.environment.name"))).isEqualTo("staging");
      assertThat(t.resource().getAttribute(io.opentelemetry.api.common.AttributeKey.stringKey("k8s.cluster.name")))
          .isEqualTo("gpu-a");
      assertThat(t.resource().getAttribute(RavelAttributes.RUN_ID)).isEqualTo("run-42");
    }
  }

  @Test
  void spans_carryMoreLinksThanTheSdkDefaultOf128() throws IOException {
    ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.FILE)).role("driver").start();
    try (ScopedSpan step = t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      for (int i = 0; i < 4096; i++) {
        step.link(dev.ravel.telemetry.context.SpanLink.of(io.opentelemetry.api.trace.SpanContext.create(
            "0af7651916cd43dd8448eb211c80319c", String.format("%016x", i + 1), io.opentelemetry.api.trace.TraceFlags
                .getSampled(), io.opentelemetry.api.trace.TraceState.getDefault())));
      }
    }
    t.close();

    JsonNode line = JSON.readTree(Files.readAllLines(t.spanFile().orElseThrow()).get(0));
    JsonNode span = line.get("resourceSpans").get(0).get("scopeSpans").get(0).get("spans").get(0);
    assertThat(span.get("links")).hasSize(4096);
    assertThat(span.path("droppedLinksCount").asInt()).isZero();
  }

  @Test
  void close_secondCloseIsHarmless() {
    ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.FILE)).role("driver").start();
    t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP).close();

    t.close();
    t.close();

    assertThat(t.stats().exported()).isEqualTo(1);
  }

  // ---------------------------------------------------------------- no exporter

  @Test
  void close_exporterNoneWritesNoFileButStillCountsSpans() throws IOException {
    ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.NONE)).role("driver").start();
    t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP).close();
    t.close();

    assertThat(t.spanFile()).isEmpty();
    assertThat(t.stats().ended()).isEqualTo(1);
    assertThat(t.stats().exported()).isZero();
    try (Stream<Path> files = Files.walk(runs)) {
      assertThat(files.filter(Files::isRegularFile)).isEmpty();
    }
  }

  @Test
  void spans_disabledConfigCreatesNoSpansAndNoFile() throws IOException {
    TelemetryConfig off = config(ExporterKind.FILE).toBuilder().enabled(false).build();

    ProcessTelemetry t = ProcessTelemetry.builder(off).role("driver").start();
    try (ScopedSpan s = t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP)) {
      assertThat(s.isRecording()).isFalse();
    }
    t.close();

    assertThat(t.stats().ended()).isZero();
    assertThat(t.spanFile()).isEmpty();
    try (Stream<Path> files = Files.walk(runs)) {
      assertThat(files.filter(Files::isRegularFile)).isEmpty();
    }
  }

  @Test
  void spans_followTheConfiguredGroups() {
    TelemetryConfig c = config(ExporterKind.NONE).toBuilder().preset(Preset.NONE)
        .spanGroups(List.of(SpanGroup.REWARD)).build();

    try (ProcessTelemetry t = ProcessTelemetry.builder(c).role("driver").start()) {
      assertThat(t.spans().isOn(SpanGroup.REWARD)).isTrue();
      assertThat(t.spans().isOn(SpanGroup.STEP)).isFalse();
    }
  }

  // ---------------------------------------------------------------- builder validation

  @Test
  void start_otlpExporterWithoutSettingsFails() {
    assertThatThrownBy(() -> ProcessTelemetry.builder(config(ExporterKind.OTLP)).start())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("otlp");
  }

  @Test
  void role_mustBeAFileNameSafeLowerCaseWord() {
    ProcessTelemetry.Builder b = ProcessTelemetry.builder(config(ExporterKind.NONE));

    assertThatThrownBy(() -> b.role("../etc")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.role("Driver")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.role(null)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.maxQueueSize(0)).isInstanceOf(IllegalArgumentException.class);
  }

  // ---------------------------------------------------------------- each exporter counted on its own

  @Test
  @Timeout(120) // far below the exporter's own timeout (1 h): a close that waited for the exporter fails here
  void close_bothExportersWithTheBackendDown_theFileGetsEverySpanAndEachExporterAddsUp() throws Exception {
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort(); // closed again: nothing listens there
    }
    ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.BOTH).toBuilder()
            .shutdownTimeout(java.time.Duration.ofSeconds(2)).build()).role("driver")
        // an export timeout of an hour: unbounded, close() would wait that long for the OTLP exporter
        .otlp(dev.ravel.telemetry.otlp.OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:" + port, "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
            "OTEL_EXPORTER_OTLP_TIMEOUT", "3600000")))
        .start();
    for (int i = 0; i < 20; i++) {
      t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP).close();
    }
    // bounded by the shutdown timeout (2 s), not the exporter's (1 h): the test's @Timeout says so, with no
    // claim on how close to 2 s it returns
    t.close();
    ExportStats s = t.stats();

    assertThat(s.exporters()).containsOnlyKeys(ProcessTelemetry.FILE_EXPORTER, ProcessTelemetry.OTLP_EXPORTER);
    assertThat(s.exporters().get("file")).isEqualTo(new ExportStats.Sent(20, 0, 0)); // not held back by OTLP
    ExportStats.Sent otlp = s.exporters().get("otlp");
    assertThat(otlp.exported()).isZero();
    assertThat(otlp.failed() + otlp.dropped()).isEqualTo(20);
    assertThat(s.addsUp()).isTrue();
    try (Stream<String> lines = Files.lines(t.spanFile().orElseThrow())) {
      assertThat(lines.count()).isPositive();
    }
  }

  // ---------------------------------------------------------------- drops

  @Test
  void stats_countSpansDroppedByAFullQueue() {
    int total = 2000;
    ProcessTelemetry t = ProcessTelemetry.builder(config(ExporterKind.FILE)).role("driver")
        .maxQueueSize(1).start();
    // the tracer directly: every span is a root, so nothing but the queue limits throughput
    Tracer tracer = t.openTelemetry().getTracer("drop-test");
    for (int i = 0; i < total; i++) {
      tracer.spanBuilder("s").startSpan().end();
    }

    ExportStats before = t.stats();
    t.close();
    ExportStats after = t.stats();

    assertThat(before.ended()).isEqualTo(total);
    assertThat(before.dropped()).as("dropped while open: %s", before).isPositive();
    assertThat(after.ended()).isEqualTo(total);
    assertThat(after.dropped()).as("dropped after close: %s", after).isPositive();
    assertThat(after.exported() + after.dropped()).as("%s", after).isEqualTo(total);
    assertThat(after.failed()).isZero();
    assertThat(after.pending()).isZero();
  }

  // ---------------------------------------------------------------- helpers

  private static Map<String, String> attributes(JsonNode resource) {
    Map<String, String> out = new HashMap<>();
    for (JsonNode a : resource.get("attributes")) {
      JsonNode v = a.get("value");
      String text = v.has("stringValue") ? v.get("stringValue").asText()
          : v.has("intValue") ? v.get("intValue").asText() : v.toString();
      out.put(a.get("key").asText(), text);
    }
    return out;
  }
}
