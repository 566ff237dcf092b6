package dev.ravel.workers.engine;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's scheduler thread (a daemon) and the inbox that feeds it. Submitting threads add requests to
 * the inbox; the thread sleeps on a condition while there is no work, and otherwise moves the inbox to the
 * {@link BatchScheduler} and runs one {@link BatchScheduler#step} per iteration. When the engine closes (or
 * the scheduler throws) the thread finishes every request still running, waiting or in the inbox: with
 * {@link FinishReason#ABORT}, or {@link FinishReason#ERROR} naming the crash; later submissions likewise.
 */
final class EngineLoop {
  // the engine's logger, whichever part of it logs
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedEngine.class);
  private static final long JOIN_TIMEOUT_MS = 10_000;
  private static final AtomicInteger THREAD_IDS = new AtomicInteger();

  private final BatchScheduler scheduler;
  private final RequestTelemetry telemetry;
  private final Thread thread;

  // guarded by lock
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();
  private final ArrayDeque<Sequence> inbox = new ArrayDeque<>();
  private boolean closed;
  private String failure;

  /** A loop over {@code scheduler} whose thread, not yet started, is named after {@code modelName}. */
  EngineLoop(String modelName, BatchScheduler scheduler, RequestTelemetry telemetry) {
    this.scheduler = scheduler;
    this.telemetry = telemetry;
    this.thread = new Thread(this::run, "ravel-engine-" + modelName + "-" + THREAD_IDS.incrementAndGet());
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** Queues all of {@code batch} at once (the scheduler sees all or none of it), or refuses all. */
  void enqueue(List<Sequence> batch) {
    String refusal;
    lock.lock();
    try {
      if (!closed) {
        inbox.addAll(batch);
        wake.signal();
        return;
      }
      refusal = failure;
    } finally {
      lock.unlock();
    }
    for (Sequence s : batch) {
      telemetry.finish(s, refusal == null ? FinishReason.ABORT : FinishReason.ERROR, refusal);
    }
  }

  /** Requests waiting for admission, the inbox included. */
  int waitingNow() {
    lock.lock();
    try {
      return scheduler.publishedWaiting() + inbox.size();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the loop after the iteration in progress and waits up to 10 s for the thread to end (unless
   * called from it). Idempotent.
   */
  void close() {
    lock.lock();
    try {
      closed = true;
      wake.signalAll();
    } finally {
      lock.unlock();
    }
    if (Thread.currentThread() != thread) {
      try {
        thread.join(JOIN_TIMEOUT_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (thread.isAlive()) {
        LOG.warn("engine scheduler {} still busy {} ms after close(); its requests abort when it returns",
            thread.getName(), JOIN_TIMEOUT_MS);
      }
    }
  }

  /** Wakes an idle loop so that it switches to a newly offered model at once. */
  void modelOffered() {
    lock.lock();
    try {
      wake.signal();
    } finally {
      lock.unlock();
    }
  }

  boolean isAlive() {
    return thread.isAlive();
  }

  private void run() {
    String crash = null;
    List<Sequence> arrivals = new ArrayList<>();
    try {
      while (true) {
        lock.lock();
        try {
          while (!closed && inbox.isEmpty() && scheduler.idle() && !scheduler.updatePending()) {
            wake.await();
          }
          if (closed) {
            break;
          }
          arrivals.addAll(inbox);
          inbox.clear();
          scheduler.publishWaiting(arrivals.size());
        } finally {
          lock.unlock();
        }
        scheduler.step(arrivals);
        arrivals.clear();
      }
    } catch (InterruptedException e) {
      LOG.debug("engine scheduler {} interrupted; aborting its requests", thread.getName());
    } catch (RuntimeException | Error e) {
      LOG.error("engine scheduler {} failed; failing its requests", thread.getName(), e);
      crash = "engine failed: " + e;
    } finally {
      shutdown(crash, arrivals);
    }
  }

  /**
   * Finishes what the scheduler holds, then {@code arrivals} (taken from the inbox for a step that threw
   * before queueing them all; those it queued or finished are finished once), then the inbox.
   */
  private void shutdown(String crash, List<Sequence> arrivals) {
    List<Sequence> left = scheduler.drain();
    left.addAll(arrivals);
    lock.lock();
    try {
      closed = true;
      failure = crash;
      left.addAll(inbox);
      inbox.clear();
    } finally {
      lock.unlock();
    }
    for (Sequence s : left) {
      telemetry.finish(s, crash == null ? FinishReason.ABORT : FinishReason.ERROR, crash);
    }
    scheduler.publish();
  }
}
