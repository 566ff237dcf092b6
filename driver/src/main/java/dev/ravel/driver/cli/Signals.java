package dev.ravel.driver.cli;

import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * SIGINT and SIGTERM for {@code ravel run}: the first asks the run to stop cleanly, a second ends the process
 * at once (as signalled processes end: 128 + the signal's number).
 */
final class Signals {
  private static final Logger LOG = LoggerFactory.getLogger(Signals.class);
  private static final java.util.concurrent.atomic.AtomicInteger RECEIVED = new java.util.concurrent.atomic.AtomicInteger();

  private Signals() {}

  /** Calls {@code onFirst} with the signal's name ({@code INT}, {@code TERM}) on the first of them. */
  static void onInterrupt(Consumer<String> onFirst) {
    for (String name : new String[] {"INT", "TERM"}) {
      try {
        Signal.handle(new Signal(name), sig -> {
          if (RECEIVED.incrementAndGet() > 1) {
            Runtime.getRuntime().halt(128 + sig.getNumber());
          }
          System.err.println("ravel: SIG" + sig.getName() + ": stopping after the step in progress"
              + " (again to stop at once)");
          onFirst.accept(sig.getName());
        });
      } catch (IllegalArgumentException e) {
        LOG.warn("cannot handle SIG{}: {}", name, e.getMessage());
      }
    }
  }

  /** The exit code of a process ended by SIG{@code name}: 130 for INT, 143 for TERM. */
  static int exitCode(String name) {
    return "TERM".equals(name) ? 128 + 15 : ExitCodes.INTERRUPTED;
  }
}
