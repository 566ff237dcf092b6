package dev.ravel.telemetry.context;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.baggage.Baggage;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class TraceCarrierTest {
  private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private final SdkTracerProvider provider = SdkTracerProvider.builder()
      .addSpanProcessor(SimpleSpanProcessor.create(exporter))
      .build();
  private final Tracer tracer = provider.get("test");

  @AfterEach
  void tearDown() {
    provider.shutdown();
  }

  @Test
  void current_insideActiveSpanExtractsToThatSpanAsRemoteParent() {
    Span parent = tracer.spanBuilder("caller").startSpan();
    TraceCarrier carrier;
    Scope scope = parent.makeCurrent();
    try {
      carrier = TraceCarrier.current();
    } finally {
      scope.close();
      parent.end();
    }

    SpanContext extracted = Span.fromContext(carrier.extract()).getSpanContext();

    assertThat(carrier.isEmpty()).isFalse();
    assertThat(carrier.traceparent()).startsWith(
        "00-" + parent.getSpanContext().getTraceId() + "-" + parent.getSpanContext().getSpanId() + "-");
    assertThat(extracted.isValid()).isTrue();
    assertThat(extracted.isRemote()).isTrue();
    assertThat(extracted.isSampled()).isTrue();
    assertThat(extracted.getTraceId()).isEqualTo(parent.getSpanContext().getTraceId());
    assertThat(extracted.getSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
  }

  @Test
  void extract_childStartedUnderExtractedContextHasTheCallerAsParent() {
    Span parent = tracer.spanBuilder("caller").startSpan();
    TraceCarrier carrier = TraceCarrier.capture(Context.root().with(parent));
    parent.end();

    Span child = tracer.spanBuilder("callee").setParent(carrier.extract()).startSpan();
    child.end();

    SpanData callee = finished("callee");
    assertThat(callee.getTraceId()).isEqualTo(parent.getSpanContext().getTraceId());
    assertThat(callee.getParentSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
    assertThat(callee.getParentSpanContext().isRemote()).isTrue();
  }

  @Test
  void extract_childStartedInsideMadeCurrentContextHasTheCallerAsParent() {
    Span parent = tracer.spanBuilder("caller").startSpan();
    TraceCarrier carrier = TraceCarrier.capture(Context.root().with(parent));
    parent.end();

    Scope scope = carrier.extract().makeCurrent();
    try {
      tracer.spanBuilder("callee").startSpan().end();
    } finally {
      scope.close();
    }

    assertThat(finished("callee").getParentSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
  }

  @Test
  void capture_carriesBaggageAndTraceState() {
    Span parent = tracer.spanBuilder("caller").startSpan();
    Context ctx = Context.root().with(parent)
        .with(Baggage.builder().put("rl.step", "7").put("tenant", "a b").build());

    TraceCarrier carrier = TraceCarrier.capture(ctx);
    Context back = carrier.extract();
    parent.end();

    assertThat(carrier.baggage()).isNotEmpty();
    assertThat(Baggage.fromContext(back).getEntryValue("rl.step")).isEqualTo("7");
    assertThat(Baggage.fromContext(back).getEntryValue("tenant")).isEqualTo("a b");
    assertThat(Span.fromContext(back).getSpanContext().getSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
  }

  @Test
  void of_tracestateTravelsToTheExtractedSpanContext() {
    TraceCarrier carrier = TraceCarrier.of(
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=abc", null);

    SpanContext sc = Span.fromContext(carrier.extract()).getSpanContext();

    assertThat(sc.getTraceId()).isEqualTo("0af7651916cd43dd8448eb211c80319c");
    assertThat(sc.getSpanId()).isEqualTo("b7ad6b7169203331");
    assertThat(sc.getTraceState().get("vendor")).isEqualTo("abc");
  }

  @Test
  void capture_rootContextIsEmpty() {
    TraceCarrier carrier = TraceCarrier.capture(Context.root());

    assertThat(carrier).isEqualTo(TraceCarrier.EMPTY);
    assertThat(carrier.isEmpty()).isTrue();
    assertThat(carrier.toHeaders()).isEmpty();
  }

  @Test
  void serialization_roundTripKeepsEqualityAndTheParent() throws IOException, ClassNotFoundException {
    Span parent = tracer.spanBuilder("caller").startSpan();
    TraceCarrier carrier = TraceCarrier.capture(
        Context.root().with(parent).with(Baggage.builder().put("k", "v").build()));
    parent.end();

    TraceCarrier copy = roundTrip(carrier);

    assertThat(copy).isEqualTo(carrier).hasSameHashCodeAs(carrier);
    assertThat(copy.toHeaders()).isEqualTo(carrier.toHeaders());
    assertThat(Span.fromContext(copy.extract()).getSpanContext().getSpanId())
        .isEqualTo(parent.getSpanContext().getSpanId());
  }

  @Test
  void serialization_emptyCarrierStaysEmpty() throws IOException, ClassNotFoundException {
    TraceCarrier copy = roundTrip(TraceCarrier.EMPTY);

    assertThat(copy).isEqualTo(TraceCarrier.EMPTY);
    assertThat(copy.isEmpty()).isTrue();
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "00-xyz-abc-01",
      "garbage",
      "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",     // trace id one short
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",     // span id one short
      "00-0af7651916cd43dd8448eb211c80319cc-b7ad6b7169203331-01",   // trace id one long
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",    // all-zero trace id
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",    // all-zero span id
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",    // upper case hex
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"     // forbidden version
  })
  void extract_malformedTraceparentGivesNoParentSoANewRootStarts(String traceparent) {
    TraceCarrier carrier = TraceCarrier.of(traceparent, "", "");

    Context ctx = carrier.extract();
    tracer.spanBuilder("callee").setParent(ctx).startSpan().end();

    assertThat(Span.fromContext(ctx).getSpanContext().isValid()).isFalse();
    SpanData callee = finished("callee");
    assertThat(callee.getParentSpanContext().isValid()).isFalse();
    assertThat(callee.getTraceId()).isNotEqualTo("0af7651916cd43dd8448eb211c80319c");
  }

  @Test
  void extract_emptyCarrierGivesNoParentSoANewRootStarts() {
    Context ctx = TraceCarrier.EMPTY.extract();
    tracer.spanBuilder("callee").setParent(ctx).startSpan().end();

    assertThat(Span.fromContext(ctx).getSpanContext().isValid()).isFalse();
    assertThat(finished("callee").getParentSpanContext().isValid()).isFalse();
  }

  @Test
  void extract_nullsCountAsAbsent() {
    TraceCarrier carrier = TraceCarrier.of(null, null, null);

    assertThat(carrier).isEqualTo(TraceCarrier.EMPTY);
    assertThat(Span.fromContext(carrier.extract()).getSpanContext().isValid()).isFalse();
  }

  @Test
  void extract_onBaseKeepsTheBaseWhenTheCarrierIsEmpty() {
    Span local = tracer.spanBuilder("local").startSpan();
    Context base = Context.root().with(local);

    Context ctx = TraceCarrier.EMPTY.extract(base);
    local.end();

    assertThat(Span.fromContext(ctx).getSpanContext()).isEqualTo(local.getSpanContext());
  }

  @Test
  void toHeaders_listsOnlyNonEmptyValues() {
    assertThat(TraceCarrier.of("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", null).toHeaders())
        .containsExactly(Map.entry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    assertThat(TraceCarrier.of("tp", "ts", "bg").toHeaders())
        .containsExactly(Map.entry("traceparent", "tp"), Map.entry("tracestate", "ts"), Map.entry("baggage", "bg"));
    assertThat(TraceCarrier.of("", "", "k=v").toHeaders()).containsExactly(Map.entry("baggage", "k=v"));
    assertThat(TraceCarrier.EMPTY.toHeaders()).isEmpty();
  }

  @Test
  void fromEnvironment_aValidTraceparentIsTheParent_anAbsentOrMalformedOneIsNull() {
    String tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    Context c = TraceCarrier.fromEnvironment(Map.of(TraceCarrier.STARTUP_ENV, " " + tp + "\n"), TraceCarrier.STARTUP_ENV);

    assertThat(io.opentelemetry.api.trace.Span.fromContext(c).getSpanContext().getSpanId())
        .isEqualTo("b7ad6b7169203331");
    assertThat(TraceCarrier.fromEnvironment(Map.of(), TraceCarrier.STARTUP_ENV)).isNull();
    assertThat(TraceCarrier.fromEnvironment(Map.of(TraceCarrier.STARTUP_ENV, ""), TraceCarrier.STARTUP_ENV)).isNull();
    assertThat(TraceCarrier.fromEnvironment(Map.of(TraceCarrier.STARTUP_ENV, "00-nothex-01"), TraceCarrier.STARTUP_ENV))
        .isNull();
  }

  @Test
  void equals_comparesAllThreeValues() {
    assertThat(TraceCarrier.of("a", "b", "c")).isEqualTo(TraceCarrier.of("a", "b", "c"))
        .isNotEqualTo(TraceCarrier.of("a", "b", "d"))
        .isNotEqualTo(TraceCarrier.of("a", "x", "c"))
        .isNotEqualTo(TraceCarrier.of("x", "b", "c"));
  }

  private SpanData finished(String name) {
    List<SpanData> spans = exporter.getFinishedSpanItems();
    return spans.stream().filter(s -> s.getName().equals(name)).findFirst()
        .orElseThrow(() -> new AssertionError("no finished span " + name + " in " + spans));
  }

  private static TraceCarrier roundTrip(TraceCarrier carrier) throws IOException, ClassNotFoundException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(carrier);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      return (TraceCarrier) in.readObject();
    }
  }
}
