package dev.ravel.workers.serve;

import java.time.Duration;
import java.util.Optional;

/**
 * {@code --exit-with-parent}: a daemon thread that checks once per interval whether a process is still
 * alive and runs an action once when it is gone. The process is held by its {@link ProcessHandle}, so a
 * later process that reuses the PID does not count as the same one.
 */
final class ParentWatch {
  private ParentWatch() {}

  /** Starts watching {@code pid}; when it is gone (or already is), runs {@code onGone} on the watch thread. */
  static Thread start(long pid, Duration interval, Runnable onGone) {
    Optional<ProcessHandle> handle = ProcessHandle.of(pid);
    Thread t = new Thread(() -> {
      try {
        while (handle.isPresent() && handle.get().isAlive()) {
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
