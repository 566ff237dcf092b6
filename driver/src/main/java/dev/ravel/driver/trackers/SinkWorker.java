package dev.ravel.driver.trackers;

import dev.ravel.telemetry.runs.StepRecord;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * A tracker's own thread and bounded queue: a step is handed over without waiting ({@link #offer}), and a tracker
 * that is down or slow holds back neither the run nor the other trackers. Every step offered is counted once, as
 * sent, failed (the tracker refused it or could not be reached) or dropped (the queue was full, or the step was
 * still queued when the close deadline passed): {@code steps = sent + failed + dropped}. The first failure is
 * reported once through {@code warn}; later ones are only counted.
 */
final class SinkWorker {
  /** Steps a tracker may fall behind before the next ones are dropped. */
  static final int QUEUE_CAPACITY = 10_000;
  /** Steps delivered in one call at most. */
  static final int BATCH = 50;

  private final Sink sink;
  private final Consumer<String> warn;
  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>(QUEUE_CAPACITY);
  private final Thread thread;
  private final AtomicLong steps = new AtomicLong();
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();
  private final AtomicBoolean warned = new AtomicBoolean();
  private volatile String firstError;
  private volatile boolean closing;
  private boolean started;

  /** The end of the queue: finish the tracker's run with this status. */
  private record Finish(String status) {}

  SinkWorker(Sink sink, Consumer<String> warn) {
    this.sink = sink;
    this.warn = warn;
    this.thread = new Thread(this::loop, "ravel-tracker-" + sink.name());
    this.thread.setDaemon(true);
  }

  /** Starts the thread, which gets the tracker ready at once (its run exists while the first step runs). */
  void start() {
    thread.start();
  }

  /** Hands {@code m} over without waiting; counted as dropped when the queue is full or closed. */
  void offer(StepRecord m) {
    steps.incrementAndGet();
    if (closing || !queue.offer(m)) {
      dropped.incrementAndGet();
    }
  }

  /**
   * Delivers what is queued, ends the tracker's run with {@code status} and frees the tracker, waiting until
   * {@code deadlineNanos} ({@link System#nanoTime()}) at most; what is still queued then is counted as dropped.
   */
  void close(String status, long deadlineNanos) {
    closing = true;
    try {
      boolean queued = queue.offer(new Finish(status), Math.max(0, deadlineNanos - System.nanoTime()),
          TimeUnit.NANOSECONDS);
      if (queued) {
        thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime())));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      thread.interrupt();
      sink.close();
      try {
        thread.join(2_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      fail(new IllegalStateException("did not finish by the close deadline"));
    }
    sink.close();
    for (Object o; (o = queue.poll()) != null; ) {
      if (o instanceof StepRecord) {
        dropped.incrementAndGet();
      }
    }
  }

  private void loop() {
    try {
      ensureStarted();
      while (true) {
        Object first = queue.take();
        List<Object> taken = new ArrayList<>();
        taken.add(first);
        queue.drainTo(taken, BATCH - 1);
        List<StepRecord> batch = new ArrayList<>();
        for (int k = 0; k < taken.size(); k++) {
          if (taken.get(k) instanceof StepRecord m) {
            batch.add(m);
          } else if (taken.get(k) instanceof Finish f) {
            // a step handed over after close() began is counted, not lost: it comes too late to send
            dropped.addAndGet(taken.subList(k + 1, taken.size()).stream().filter(StepRecord.class::isInstance)
                .count());
            deliver(batch);
            finish(f.status());
            return;
          }
        }
        deliver(batch);
      }
    } catch (InterruptedException e) {
      // the close deadline passed: close() counts what is left
    }
  }

  private boolean ensureStarted() throws InterruptedException {
    if (!started) {
      try {
        sink.start();
        started = true;
      } catch (InterruptedException e) {
        throw e;
      } catch (Exception e) {
        fail(e);
      }
    }
    return started;
  }

  private void deliver(List<StepRecord> batch) throws InterruptedException {
    if (batch.isEmpty()) {
      return;
    }
    boolean up;
    try {
      up = ensureStarted();
    } catch (InterruptedException e) { // the close deadline passed while the tracker was starting
      dropped.addAndGet(batch.size());
      throw e;
    }
    if (!up) {
      failed.addAndGet(batch.size());
      return;
    }
    try {
      sink.send(batch);
      sent.addAndGet(batch.size());
    } catch (InterruptedException e) {
      dropped.addAndGet(batch.size());
      throw e;
    } catch (Exception e) {
      failed.addAndGet(batch.size());
      fail(e);
    }
  }

  private void finish(String status) throws InterruptedException {
    if (!started) {
      return; // no run of the tracker's to end
    }
    try {
      sink.finish(status);
    } catch (InterruptedException e) {
      throw e;
    } catch (Exception e) {
      fail(e);
    }
  }

  private void fail(Exception e) {
    errors.incrementAndGet();
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    if (warned.compareAndSet(false, true)) {
      firstError = message;
      warn.accept("tracker " + sink.name() + " failed: " + message + " (the run goes on; its later failures are"
          + " counted in run.json's telemetry.trackers, not shown)");
    }
  }

  /** The tracker's name. */
  String name() {
    return sink.name();
  }

  /** {@return the steps offered, and how many were sent, failed and dropped} */
  long[] counts() {
    return new long[] {steps.get(), sent.get(), failed.get(), dropped.get()};
  }

  /** What {@code run.json}'s {@code telemetry.trackers} shows of this tracker. */
  Map<String, Object> json() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("steps", steps.get());
    m.put("sent", sent.get());
    m.put("failed", failed.get());
    m.put("dropped", dropped.get());
    m.put("errors", errors.get());
    m.put("first_error", firstError);
    m.putAll(sink.details());
    return m;
  }
}
