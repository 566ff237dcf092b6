package dev.ravel.driver.cli;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.status.StatusConsoleListener;
import org.apache.logging.log4j.status.StatusLogger;

/**
 * Keeps Ray's own messages off the terminal: the file named by {@code -Dravel.driver.log} (bin/ravel sets it
 * to {@code $TMPDIR/ravel-driver-<pid>.log} and sends Ray's native log lines from standard error there too)
 * receives log4j's status messages, which Ray's driver logging set-up turns up to DEBUG on standard output
 * ("Starting configuration ...", "Stopping configuration ..."), and the OpenTelemetry SDK's own
 * {@code java.util.logging} records ({@code SEVERE: Failed to export spans ...} while a backend is down): Ravel
 * accounts for every span itself, in one line at the end, so the SDK's records are kept in the file rather than
 * repeated on the terminal. The file is created on the first message.
 */
final class DriverLog {
  static final String PROPERTY = "ravel.driver.log";

  private DriverLog() {}

  /** Installs the status listener when bin/ravel named a file; does nothing otherwise. */
  static void install() {
    String file = System.getProperty(PROPERTY);
    if (file == null || file.isBlank()) {
      return;
    }
    try {
      // log4j reuses a console status listener that is already registered (and only changes its level), so
      // Ray's configuration writes its status messages here instead of opening one on standard output
      StatusLogger.getLogger().registerListener(new StatusConsoleListener(Level.WARN,
          new PrintStream(new LazyFile(Path.of(file)), true, StandardCharsets.UTF_8)));
    } catch (RuntimeException | LinkageError e) {
      // a cluster Ray with another log4j: its messages stay on the terminal, nothing else changes
    }
    julToFile(Path.of(file));
  }

  /** Sends every {@code java.util.logging} record (the OpenTelemetry SDK's) to {@code file}, none to stderr. */
  static void julToFile(Path file) {
    java.util.logging.Logger root = java.util.logging.LogManager.getLogManager().getLogger("");
    for (java.util.logging.Handler h : root.getHandlers()) {
      root.removeHandler(h);
    }
    java.util.logging.Handler toFile = new java.util.logging.StreamHandler(
        new PrintStream(new LazyFile(file), true, StandardCharsets.UTF_8), new java.util.logging.SimpleFormatter()) {
      @Override
      public synchronized void publish(java.util.logging.LogRecord r) {
        super.publish(r);
        flush();
      }
    };
    toFile.setLevel(java.util.logging.Level.INFO);
    root.addHandler(toFile);
  }

  /** The file named by {@code -Dravel.driver.log}, or null. */
  static String path() {
    String file = System.getProperty(PROPERTY);
    return file == null || file.isBlank() ? null : file;
  }

  /** Opens its file for appending on the first byte. */
  private static final class LazyFile extends OutputStream {
    private final Path path;
    private OutputStream out;

    LazyFile(Path path) {
      this.path = path;
    }

    private OutputStream out() throws IOException {
      if (out == null) {
        out = new FileOutputStream(path.toFile(), true);
      }
      return out;
    }

    @Override
    public synchronized void write(int b) throws IOException {
      out().write(b);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
      out().write(b, off, len);
    }

    @Override
    public synchronized void flush() throws IOException {
      if (out != null) {
        out.flush();
      }
    }
  }
}
