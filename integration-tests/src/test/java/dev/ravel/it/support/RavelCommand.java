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
    Path out = Files.createTempFile("ravel-out", ".txt");
    Path err = Files.createTempFile("ravel-err", ".txt");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    Process p = pb.start();
    try {
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroy();
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
        throw new IllegalStateException("bin/ravel " + String.join(" ", args) + " did not finish in "
            + timeoutSeconds + " s; stdout:\n" + Files.readString(out) + "\nstderr:\n" + Files.readString(err));
      }
      return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
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
