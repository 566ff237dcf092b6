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
  private final Condition parked = lock.newCondition();
  private boolean closed;
  private String failure;
  /** Whether the loop holds still (no iteration) until {@link #resume}; requests still queue in the inbox. */
  private boolean paused;
  /** Whether an iteration is under way (the scheduler is outside the lock, stepping). */
  private boolean stepping;
  /** Whether the loop is to abort everything it holds before its next iteration. */
  private boolean abortPending;

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
        scheduler.inboxChanged(inbox.size());
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

  /**
   * Holds the loop still after the iteration in progress: running requests keep their place and tokens (their
   * caches are recomputed if the model changes meanwhile), arrivals queue; returns once no iteration runs.
   */
  void pause() throws InterruptedException {
    lock.lock();
    try {
      paused = true;
      while (stepping && !closed) {
        parked.await();
      }
    } finally {
      lock.unlock();
    }
  }

  /** Lets a paused loop iterate again. */
  void resume() {
    lock.lock();
    try {
      paused = false;
      wake.signalAll();
    } finally {
      lock.unlock();
    }
  }

  boolean paused() {
    lock.lock();
    try {
      return paused;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Finishes every request the loop holds (running, waiting and in the inbox) with {@link FinishReason#ABORT} after
   * the iteration in progress, paused or not; returns once they are finished.
   */
  void abortAll() throws InterruptedException {
    lock.lock();
    try {
      abortPending = true;
      wake.signalAll();
      while (abortPending && !closed && thread.isAlive()) {
        parked.await();
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits until nothing runs, waits or sits in the inbox (at most {@code millis}); false on timeout. A paused loop
   * with work never gets there.
   */
  boolean awaitIdle(long millis) throws InterruptedException {
    long deadline = System.nanoTime() + millis * 1_000_000L;
    lock.lock();
    try {
      while (!closed && (stepping || !inbox.isEmpty() || !scheduler.idle())) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        parked.awaitNanos(left);
      }
      return true;
    } finally {
      lock.unlock();
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
          while (!closed && !abortPending
              && (paused || inbox.isEmpty() && scheduler.idle() && !scheduler.updatePending())) {
            wake.await();
          }
          if (closed) {
            break;
          }
          if (abortPending) {
            abortHeld();
            continue;
          }
          arrivals.addAll(inbox);
          inbox.clear();
          scheduler.inboxChanged(0);
          scheduler.publishWaiting(arrivals.size());
          stepping = true;
        } finally {
          lock.unlock();
        }
        boolean stepped = false;
        try {
          scheduler.step(arrivals);
          stepped = true;
        } finally {
          if (stepped) {
            arrivals.clear(); // on a failure the crash path finishes those the step did not queue
          }
          lock.lock();
          try {
            stepping = false;
            parked.signalAll();
          } finally {
            lock.unlock();
          }
        }
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

  /** With the lock held, between iterations: finishes everything held with ABORT and signals {@link #abortAll}. */
  private void abortHeld() {
    List<Sequence> left = scheduler.drain();
    left.addAll(inbox);
    inbox.clear();
    scheduler.inboxChanged(0);
    scheduler.publish();
    for (Sequence s : left) {
      telemetry.finish(s, FinishReason.ABORT, null);
    }
    abortPending = false;
    parked.signalAll();
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
      scheduler.inboxChanged(0);
      parked.signalAll();
    } finally {
      lock.unlock();
    }
    for (Sequence s : left) {
      telemetry.finish(s, crash == null ? FinishReason.ABORT : FinishReason.ERROR, crash);
    }
    scheduler.publish();
  }
}
