package dev.ravel.telemetry.sdk;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.data.MetricDataType;
import io.opentelemetry.sdk.metrics.export.CollectionRegistration;
import io.opentelemetry.sdk.metrics.export.MetricReader;
import io.opentelemetry.sdk.trace.ReadWriteSpan;
import io.opentelemetry.sdk.trace.ReadableSpan;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The counting pieces behind {@link ExportStats}. */
final class Counters {
  private static final Logger LOG = LoggerFactory.getLogger(Counters.class);

  final AtomicLong ended = new AtomicLong();
  /** Each exporter's counters, in the order they were set up. */
  private final Map<String, Exporter> exporters = new LinkedHashMap<>();

  /** One exporter's counters: exported and failed by its counting wrapper, dropped by its own queue. */
  static final class Exporter {
    final AtomicLong exported = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final DropReader drops = new DropReader();
    /** Where the exporter's batch processor reports its drops. */
    final SdkMeterProvider selfMeters = SdkMeterProvider.builder().registerMetricReader(drops).build();
  }

  ExportStats snapshot() {
    Map<String, ExportStats.Sent> m = new LinkedHashMap<>();
    synchronized (exporters) {
      exporters.forEach((k, e) -> m.put(k, new ExportStats.Sent(e.exported.get(), e.failed.get(), e.drops.dropped())));
    }
    return new ExportStats(ended.get(), m);
  }

  /** The counters of exporter {@code name}, created on first use. */
  Exporter exporter(String name) {
    synchronized (exporters) {
      return exporters.computeIfAbsent(name, k -> new Exporter());
    }
  }

  /** Shuts every exporter's self-telemetry down. */
  void close() {
    synchronized (exporters) {
      exporters.values().forEach(e -> e.selfMeters.shutdown());
    }
  }

  /** Counts sampled spans as they end, in front of the batch processor. */
  SpanProcessor endCounter() {
    return new SpanProcessor() {
      @Override
      public void onStart(Context parentContext, ReadWriteSpan span) {}

      @Override
      public boolean isStartRequired() {
        return false;
      }

      @Override
      public void onEnd(ReadableSpan span) {
        if (span.getSpanContext().isSampled()) {
          ended.incrementAndGet();
        }
      }

      @Override
      public boolean isEndRequired() {
        return true;
      }
    };
  }

  /**
   * Wraps exporter {@code name} to count what it exported and what failed; failures are logged with the
   * destination.
   */
  SpanExporter counting(String name, SpanExporter delegate, String destination) {
    Exporter counts = exporter(name);
    return new SpanExporter() {
      @Override
      public CompletableResultCode export(Collection<SpanData> spans) {
        int n = spans.size();
        CompletableResultCode r;
        try {
          r = delegate.export(spans);
        } catch (RuntimeException e) {
          counts.failed.addAndGet(n);
          LOG.warn("span export to {} failed: {}", destination, e.toString());
          return CompletableResultCode.ofFailure();
        }
        r.whenComplete(() -> {
          if (r.isSuccess()) {
            counts.exported.addAndGet(n);
          } else {
            long total = counts.failed.addAndGet(n);
            LOG.warn("span export to {} failed for {} span(s) ({} failed so far)", destination, n, total);
          }
        });
        return r;
      }

      @Override
      public CompletableResultCode flush() {
        return delegate.flush();
      }

      @Override
      public CompletableResultCode shutdown() {
        return delegate.shutdown();
      }

      @Override
      public String toString() {
        return "Counting{" + destination + "}";
      }
    };
  }

  /**
   * Reads the batch span processor's own self-telemetry on demand: the number of spans it dropped because
   * its queue was full (legacy {@code processedSpans{dropped=true}} or the newer
   * {@code otel.sdk.processor.span.processed{error.type}}).
   */
  static final class DropReader implements MetricReader {
    private static final AttributeKey<Boolean> DROPPED = AttributeKey.booleanKey("dropped");
    private static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
    private volatile CollectionRegistration registration = CollectionRegistration.noop();

    @Override
    public void register(CollectionRegistration registration) {
      this.registration = registration;
    }

    long dropped() {
      long sum = 0;
      for (MetricData m : registration.collectAllMetrics()) {
        if (m.getType() != MetricDataType.LONG_SUM) {
          continue;
        }
        for (LongPointData p : m.getLongSumData().getPoints()) {
          boolean legacy = m.getName().equals("processedSpans") && Boolean.TRUE.equals(p.getAttributes().get(DROPPED));
          boolean latest = m.getName().equals("otel.sdk.processor.span.processed") && p.getAttributes().get(ERROR_TYPE) != null;
          if (legacy || latest) {
            sum += p.getValue();
          }
        }
      }
      return sum;
    }

    @Override
    public AggregationTemporality getAggregationTemporality(InstrumentType instrumentType) {
      return AggregationTemporality.CUMULATIVE;
    }

    @Override
    public CompletableResultCode forceFlush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      return CompletableResultCode.ofSuccess();
    }
  }
}
