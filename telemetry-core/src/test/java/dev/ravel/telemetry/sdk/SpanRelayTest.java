package dev.ravel.telemetry.sdk;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SpanRelayTest {
  private static List<SpanData> spans(int n) {
    InMemorySpanExporter made = InMemorySpanExporter.create();
    SdkTracerProvider p = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(made)).build();
    for (int i = 0; i < n; i++) {
      p.get("test").spanBuilder("s" + i).startSpan().end();
    }
    List<SpanData> out = List.copyOf(made.getFinishedSpanItems()); // before close: closing empties the exporter
    p.close();
    assertThat(out).hasSize(n);
    return out;
  }

  @Test
  void close_afterOffers_everySpanExportedAndCounted() {
    Collecting backend = new Collecting();
    SpanRelay relay = SpanRelay.create(backend, 100, Duration.ofSeconds(10), "test");
    relay.offer(spans(30));
    relay.offer(spans(20));
    relay.close(Duration.ofSeconds(30));

    assertThat(backend.spans).hasSize(50);
    assertThat(backend.shutdown).isTrue();
    assertThat(relay.offered()).isEqualTo(50);
    assertThat(relay.sent()).isEqualTo(new ExportStats.Sent(50, 0, 0));
  }

  @Test
  void offer_overAFullQueue_dropsWhatDoesNotFitAndCountsItWithoutBlocking() throws Exception {
    CountDownLatch exporting = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    List<SpanData> got = new ArrayList<>();
    SpanExporter held = new SpanExporter() { // holds the first batch until released: the queue fills behind it
      @Override
      public CompletableResultCode export(Collection<SpanData> batch) {
        exporting.countDown();
        try {
          release.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        synchronized (got) {
          got.addAll(batch);
        }
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
    };
    SpanRelay relay = SpanRelay.create(held, 10, Duration.ofSeconds(60), "test");
    relay.offer(spans(1));
    // the relay's thread took the first span and is held exporting it: the queue is empty
    assertThat(exporting.await(30, TimeUnit.SECONDS)).isTrue();
    relay.offer(spans(25)); // 10 fit in the queue, 15 do not
    assertThat(relay.sent().dropped()).isEqualTo(15);
    release.countDown();
    relay.close(Duration.ofSeconds(30));

    ExportStats.Sent sent = relay.sent();
    assertThat(sent.exported() + sent.failed() + sent.dropped()).isEqualTo(relay.offered()).isEqualTo(26);
    assertThat(sent).isEqualTo(new ExportStats.Sent(11, 0, 15));
    assertThat(got).hasSize(11);
  }

  @Test
  void close_aBackendThatFails_countsTheBatchAsFailed() {
    SpanExporter failing = new SpanExporter() {
      @Override
      public CompletableResultCode export(Collection<SpanData> batch) {
        return CompletableResultCode.ofFailure();
      }

      @Override
      public CompletableResultCode flush() {
        return CompletableResultCode.ofSuccess();
      }

      @Override
      public CompletableResultCode shutdown() {
        return CompletableResultCode.ofSuccess();
      }
    };
    SpanRelay relay = SpanRelay.create(failing, 100, Duration.ofSeconds(10), "test");
    relay.offer(spans(7));
    relay.close(Duration.ofSeconds(30));

    assertThat(relay.sent()).isEqualTo(new ExportStats.Sent(0, 7, 0));
  }

  /** A backend that keeps what it was sent (the SDK's in-memory exporter forgets it when shut down). */
  static final class Collecting implements SpanExporter {
    final List<SpanData> spans = java.util.Collections.synchronizedList(new ArrayList<>());
    volatile boolean shutdown;

    @Override
    public CompletableResultCode export(Collection<SpanData> batch) {
      spans.addAll(batch);
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      shutdown = true;
      return CompletableResultCode.ofSuccess();
    }
  }
}
