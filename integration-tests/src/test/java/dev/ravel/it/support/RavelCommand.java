package dev.ravel.it.support;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

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
}
