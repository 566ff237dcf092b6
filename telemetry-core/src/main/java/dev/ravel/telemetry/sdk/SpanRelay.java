package dev.ravel.telemetry.sdk;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spans another process recorded (an inference server's, received over OTLP by the run) sent on to this process's
 * OTLP backend through an export queue of their own, so that a backend the run exports to holds them too: they are
 * offered without blocking, exported in batches by one daemon thread, and counted: offered = exported + failed +
 * dropped once {@link #close} returned (dropped: the queue was full, or still held them when the relay had to stop).
 * Made by {@link ProcessTelemetry#otlpRelay()}, with the process's own OTLP settings (endpoint, protocol, headers).
 */
public final class SpanRelay implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SpanRelay.class);
  private static final int BATCH = 512;

  private final SpanExporter exporter;
  private final BlockingQueue<SpanData> queue;
  private final Duration exportTimeout;
  private final AtomicLong offered = new AtomicLong();
  private final AtomicLong exported = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final Thread thread;
  private volatile boolean closing;

  /**
   * A relay to {@code exporter} (shut down when the relay closes).
   *
   * @param maxQueueSize spans it holds at most; more are dropped
   * @param exportTimeout how long one batch's export may take before it counts as failed
   * @param name names its thread
   */
  public static SpanRelay create(SpanExporter exporter, int maxQueueSize, Duration exportTimeout, String name) {
    return new SpanRelay(exporter, maxQueueSize, exportTimeout, name);
  }

  private SpanRelay(SpanExporter exporter, int maxQueueSize, Duration exportTimeout, String name) {
    this.exporter = Objects.requireNonNull(exporter, "exporter");
    this.queue = new ArrayBlockingQueue<>(maxQueueSize);
    this.exportTimeout = exportTimeout;
    this.thread = new Thread(this::run, "ravel-span-relay-" + name);
    thread.setDaemon(true);
    thread.start();
  }

  /** Queues {@code spans} for export; what does not fit in the queue is counted as dropped. Never blocks. */
  public void offer(Collection<SpanData> spans) {
    for (SpanData s : spans) {
      offered.incrementAndGet();
      if (closing || !queue.offer(s)) {
        dropped.incrementAndGet();
      }
    }
  }

  /** {@return what became of the spans offered so far: exported, failed, dropped (queued ones in none yet)} */
  public ExportStats.Sent sent() {
    return new ExportStats.Sent(exported.get(), failed.get(), dropped.get());
  }

  /** {@return the spans offered so far} */
  public long offered() {
    return offered.get();
  }

  private void run() {
    List<SpanData> batch = new ArrayList<>(BATCH);
    while (true) {
      try {
        SpanData first = queue.poll(200, TimeUnit.MILLISECONDS);
        if (first == null) {
          if (closing) {
            return;
          }
          continue;
        }
        batch.add(first);
        queue.drainTo(batch, BATCH - 1);
        export(batch);
        batch.clear();
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private void export(List<SpanData> batch) {
    try {
      CompletableResultCode r = exporter.export(List.copyOf(batch)).join(exportTimeout.toMillis(),
          TimeUnit.MILLISECONDS);
      if (r.isDone() && r.isSuccess()) {
        exported.addAndGet(batch.size());
      } else {
        failed.addAndGet(batch.size());
        LOG.warn("span relay: {} spans not exported{}", batch.size(), r.isDone() ? "" : " within " + exportTimeout);
      }
    } catch (RuntimeException e) {
      failed.addAndGet(batch.size());
      LOG.warn("span relay: {} spans not exported: {}", batch.size(), e.toString());
    }
  }

  /**
   * Exports what is queued within {@code timeout}, then shuts the exporter down; what is still queued by then is
   * counted as dropped. Never throws.
   */
  public void close(Duration timeout) {
    if (closing) {
      return;
    }
    closing = true;
    try {
      thread.join(Math.max(1, timeout.toMillis()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) { // a batch still being exported: it ends as failed
      thread.interrupt();
      try {
        thread.join(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    List<SpanData> left = new ArrayList<>();
    queue.drainTo(left);
    dropped.addAndGet(left.size());
    try {
      exporter.shutdown().join(1, TimeUnit.SECONDS);
    } catch (RuntimeException e) {
      LOG.warn("span relay: exporter shutdown failed: {}", e.toString());
    }
  }

  /** {@link #close(Duration)} within 10 s. */
  @Override
  public void close() {
    close(Duration.ofSeconds(10));
  }
}
