package dev.ravel.workers.serve;

import dev.ravel.telemetry.process.ProcessIdentity;
import java.time.Duration;
import java.util.Optional;

/**
 * {@code --exit-with-parent}: a daemon thread that checks once per interval whether a process is still
 * alive and runs an action once when it is gone. The process is held by its {@link ProcessIdentity} (PID and
 * start time, read when the watch starts), so a later process that reuses the PID does not count as the same
 * one.
 */
final class ParentWatch {
  private ParentWatch() {}

  /** Starts watching {@code pid}; when it is gone (or already is), runs {@code onGone} on the watch thread. */
  static Thread start(long pid, Duration interval, Runnable onGone) {
    Optional<ProcessIdentity> parent = ProcessIdentity.of(pid);
    Thread t = new Thread(() -> {
      try {
        while (parent.isPresent() && parent.get().isAlive()) {
          Thread.sleep(interval.toMillis());
        }
      } catch (InterruptedException e) {
        return;
      }
      onGone.run();
    }, "ravel-serve-parent-watch-" + pid);
    t.setDaemon(true);
    t.start();
    return t;
  }
}
