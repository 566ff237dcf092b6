package dev.ravel.benchmarks;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.Spans;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.api.baggage.propagation.W3CBaggagePropagator;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;

/**
 * A span through Ravel's helpers against the same span through the bare OpenTelemetry SDK, on one tracer
 * provider in one JVM, so the difference is the helpers alone. Both start a span under the current
 * context, make it current, set the same two attributes, end it and restore the context; every ended span
 * reaches an exporter that counts it (a simple processor, on the calling thread, so no queue or drop blurs
 * the figure). The second pair does the same for carrying context across an actor call: capture the
 * current context into Ravel's {@link TraceCarrier} and resume it, against inject and extract with the
 * SDK's W3C propagators into a map.
 */
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class SpanBenchmark {
  static final String NAME = "rl.bench.span";
  static final AttributeKey<Long> STEP = AttributeKey.longKey("rl.step");
  static final AttributeKey<String> ROLE = AttributeKey.stringKey("rl.actor.role");
  private static final TextMapPropagator PROPAGATOR = TextMapPropagator.composite(
      W3CTraceContextPropagator.getInstance(), W3CBaggagePropagator.getInstance());
  private static final TextMapGetter<Map<String, String>> GETTER = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(Map<String, String> carrier) {
      return carrier.keySet();
    }

    @Override
    public String get(Map<String, String> carrier, String key) {
      return carrier == null ? null : carrier.get(key);
    }
  };

  private Counting exporter;
  private SdkTracerProvider provider;
  private Tracer tracer;
  private Spans spans;
  private Span parent;
  private Scope parentScope;

  @Setup(Level.Trial)
  public void setUp() {
    exporter = new Counting();
    provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
    OpenTelemetrySdk otel = OpenTelemetrySdk.builder().setTracerProvider(provider).build();
    spans = Spans.create(otel, Set.of(SpanGroup.WORKER));
    tracer = spans.tracer();
    // every span is a child, as in a run: under a current span
    parent = tracer.spanBuilder("rl.bench.parent").startSpan();
    parentScope = parent.makeCurrent();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    parentScope.close();
    parent.end();
    provider.close();
    if (exporter.exported == 0) {
      throw new IllegalStateException("no span reached the exporter");
    }
  }

  @Benchmark
  public void ravelSpan() {
    try (ScopedSpan s = spans.start(SpanGroup.WORKER, NAME)) {
      s.set(STEP, 7L).set(ROLE, "generation_worker");
    }
  }

  @Benchmark
  public void bareSdkSpan() {
    Span span = tracer.spanBuilder(NAME).setParent(Context.current()).setSpanKind(SpanKind.INTERNAL).startSpan();
    try (Scope scope = span.makeCurrent()) {
      span.setAttribute(STEP, 7L);
      span.setAttribute(ROLE, "generation_worker");
    } finally {
      span.end();
    }
  }

  @Benchmark
  public void ravelCarrier(Blackhole bh) {
    bh.consume(TraceCarrier.current().extract());
  }

  @Benchmark
  public void bareSdkPropagation(Blackhole bh) {
    Map<String, String> m = new HashMap<>();
    PROPAGATOR.inject(Context.current(), m, Map::put);
    bh.consume(PROPAGATOR.extract(Context.root(), m, GETTER));
  }

  /** Counts what it is given; exporting costs nothing else. */
  static final class Counting implements SpanExporter {
    volatile long exported;

    @Override
    public CompletableResultCode export(Collection<SpanData> batch) {
      exported += batch.size();
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      return CompletableResultCode.ofSuccess();
    }
  }
}
