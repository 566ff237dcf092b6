package dev.ravel.it.support;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Runs this checkout's {@code bin/ravel} as a user would, in its own process, bounded in time. */
public final class RavelCommand {
  private RavelCommand() {}

  /** What a command printed and how it ended. */
  public record Result(int exitCode, String stdout, String stderr) {}

  public static Result run(Map<String, String> env, long timeoutSeconds, String... args)
      throws IOException, InterruptedException {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    List<String> cmd = new ArrayList<>();
    cmd.add(home.resolve("bin/ravel").toString());
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().clear();
    pb.environment().putAll(env);
    Process p = pb.start();
    // read to the end of each stream, not merely until the driver exits: bin/ravel's stderr passes through a filter
    // process (awk) that may still be writing the driver's last line when the JVM has exited
    Drain out = new Drain(p.getInputStream());
    Drain err = new Drain(p.getErrorStream());
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroy();
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
      throw new IllegalStateException("bin/ravel " + String.join(" ", args) + " did not finish in "
          + timeoutSeconds + " s; stdout:\n" + out.text(5) + "\nstderr:\n" + err.text(5));
    }
    // the filter ends once the driver's stderr is closed; a bound in case some daemon kept the pipe open
    return new Result(p.exitValue(), out.text(30), err.text(30));
  }

  /** A stream read to its end on a thread of its own. */
  private static final class Drain {
    private final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    private final Thread thread;

    Drain(java.io.InputStream in) {
      thread = new Thread(() -> {
        byte[] buf = new byte[8192];
        try (in) {
          for (int n; (n = in.read(buf)) >= 0; ) {
            synchronized (bytes) {
              bytes.write(buf, 0, n);
            }
          }
        } catch (IOException e) {
          // the process was destroyed: what was read stays
        }
      }, "ravel-command-drain");
      thread.setDaemon(true);
      thread.start();
    }

    /** What was read, once the stream ended or {@code seconds} passed. */
    String text(long seconds) throws InterruptedException {
      thread.join(TimeUnit.SECONDS.toMillis(seconds));
      synchronized (bytes) {
        return bytes.toString(StandardCharsets.UTF_8);
      }
    }
  }

  /**
   * Waits (at most {@code seconds}) until a running command's output file has matched {@code pattern} and
   * then contains {@code after}; fails with the output if the command ends first or the time runs out.
   */
  public static Matcher awaitOutput(Path out, Process command, Pattern pattern, String after, long seconds)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (System.nanoTime() < deadline) {
      String text = Files.readString(out, StandardCharsets.UTF_8);
      Matcher m = pattern.matcher(text);
      if (m.find() && text.contains(after)) {
        return m;
      }
      if (!command.isAlive()) {
        throw new AssertionError("the command ended early (" + command.exitValue() + "):\n" + text);
      }
      Thread.sleep(200);
    }
    throw new AssertionError("no '" + pattern + "' then '" + after + "' within " + seconds + " s:\n"
        + Files.readString(out, StandardCharsets.UTF_8));
  }
}
