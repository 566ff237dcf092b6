package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.sdk.SpanRelay;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OtlpReceiverTest {
  @TempDir
  Path dir;

  @Test
  void receive_anOtlpHttpExporter_writesOtlpJsonSendsOnTheSameSpansWithTheRunsResourceAndCountsEverySpan()
      throws Exception {
    Map<String, String> run = Map.of("rl.run.id", "run-7", "rl.process.role", "inference_server",
        "service.name", "ravel");
    String parentSpanId;
    String traceId;
    List<SpanData> relayed = java.util.Collections.synchronizedList(new ArrayList<>());
    io.opentelemetry.sdk.trace.export.SpanExporter backend = new io.opentelemetry.sdk.trace.export.SpanExporter() {
      @Override
      public io.opentelemetry.sdk.common.CompletableResultCode export(java.util.Collection<SpanData> batch) {
        relayed.addAll(batch);
        return io.opentelemetry.sdk.common.CompletableResultCode.ofSuccess();
      }

      @Override
      public io.opentelemetry.sdk.common.CompletableResultCode flush() {
        return io.opentelemetry.sdk.common.CompletableResultCode.ofSuccess();
      }

      @Override
      public io.opentelemetry.sdk.common.CompletableResultCode shutdown() {
        return io.opentelemetry.sdk.common.CompletableResultCode.ofSuccess();
      }
    };
    OtlpReceiver receiver = OtlpReceiver.start(dir, SpanRelay.create(backend, 100, Duration.ofSeconds(10), "test"),
        run);
    try {
      // a server's exporter as vLLM's: OTLP/HTTP protobuf, gzip, a resource without a service name of its own
      OtlpHttpSpanExporter exporter = OtlpHttpSpanExporter.builder().setEndpoint(receiver.endpoint())
          .setCompression("gzip").build();
      SdkTracerProvider provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter))
          .setResource(Resource.create(Attributes.of(AttributeKey.stringKey("service.name"),
              "unknown_service:python", AttributeKey.stringKey("rl.run.id"), "not-this-one")))
          .build();
      Tracer tracer = provider.get("vllm.tracing.otel");
      Span parent = tracer.spanBuilder("rl.worker.generate").startSpan();
      try (Scope ignored = parent.makeCurrent()) {
        tracer.spanBuilder("llm_request").setAttribute("gen_ai.latency.e2e", 0.25).startSpan().end();
      }
      parent.end();
      provider.forceFlush().join(10, java.util.concurrent.TimeUnit.SECONDS);
      provider.close();
      parentSpanId = parent.getSpanContext().getSpanId();
      traceId = parent.getSpanContext().getTraceId();

      assertThat(receiver.file().getFileName().toString()).matches("traces-inference_server-otlp-\\d+\\.jsonl");
    } finally {
      receiver.close();
    }
    ExportStats counts = receiver.counts();
    assertThat(counts.ended()).isEqualTo(2);
    assertThat(counts.exporters()).containsExactly(Map.entry(OtlpReceiver.EXPORTER, new ExportStats.Sent(2, 0, 0)),
        Map.entry("otlp", new ExportStats.Sent(2, 0, 0)));
    // sent on as they came, with the run's resource: ids, parent, names, attributes
    assertThat(relayed).extracting(SpanData::getName).containsExactlyInAnyOrder("rl.worker.generate", "llm_request");
    SpanData sent = relayed.stream().filter(s -> s.getName().equals("llm_request")).findFirst().orElseThrow();
    assertThat(sent.getTraceId()).isEqualTo(traceId);
    assertThat(sent.getParentSpanId()).isEqualTo(parentSpanId);
    assertThat(sent.getAttributes().get(AttributeKey.doubleKey("gen_ai.latency.e2e"))).isEqualTo(0.25);
    assertThat(sent.getInstrumentationScopeInfo().getName()).isEqualTo("vllm.tracing.otel");
    assertThat(sent.getEndEpochNanos()).isGreaterThanOrEqualTo(sent.getStartEpochNanos());
    run.forEach((k, v) -> assertThat(sent.getResource().getAttribute(AttributeKey.stringKey(k))).isEqualTo(v));
    List<io.opentelemetry.proto.trace.v1.Span> spans = new ArrayList<>();
    List<ResourceSpans> resources = new ArrayList<>();
    try (var files = Files.list(dir)) {
      for (Path f : files.toList()) {
        for (String line : Files.readAllLines(f)) {
          var req = ExportTraceServiceRequest.newBuilder();
          JsonFormat.parser().merge(line, req);
          resources.addAll(req.getResourceSpansList());
          req.getResourceSpansList().forEach(rs -> rs.getScopeSpansList().forEach(ss -> spans.addAll(ss.getSpansList())));
        }
      }
    }
    assertThat(spans).extracting(io.opentelemetry.proto.trace.v1.Span::getName)
        .containsExactlyInAnyOrder("rl.worker.generate", "llm_request");
    // ids in hex, as OTLP JSON writes them (a plain protobuf JSON parser reads that text as base64)
    Base64.Encoder b64 = Base64.getEncoder();
    var child = spans.stream().filter(s -> s.getName().equals("llm_request")).findFirst().orElseThrow();
    assertThat(b64.encodeToString(child.getTraceId().toByteArray())).isEqualTo(traceId);
    assertThat(b64.encodeToString(child.getParentSpanId().toByteArray())).isEqualTo(parentSpanId);
    assertThat(HexFormat.of().isHexDigit(b64.encodeToString(child.getSpanId().toByteArray()).charAt(0))).isTrue();
    // the run's attributes win over the server's; its unknown_service default gives way to the run's name
    assertThat(resources).allSatisfy(rs -> assertThat(rs.getResource().getAttributesList().stream()
        .collect(Collectors.toMap(KeyValue::getKey, kv -> kv.getValue().getStringValue(), (a, b) -> a + "," + b)))
        .containsAllEntriesOf(run));
  }

  @Test
  void receive_aBodyThatIsNotAnExportRequest_isRefusedAndCountedApart() throws Exception {
    try (OtlpReceiver receiver = OtlpReceiver.start(dir, null, Map.of())) {
      HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(receiver.endpoint()))
          .POST(HttpRequest.BodyPublishers.ofByteArray(new byte[] {(byte) 0xff, 0x01, 0x02}))
          .header("Content-Type", "application/x-protobuf").build(), HttpResponse.BodyHandlers.ofString());

      assertThat(r.statusCode()).isEqualTo(400);
      assertThat(receiver.unreadableRequests()).isEqualTo(1);
      assertThat(receiver.counts().ended()).isZero();
    }
  }
}
