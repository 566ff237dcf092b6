package dev.ravel.it.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Python scripts of the workers' package (its tests' fixtures) run with the Ray virtualenv's interpreter. */
public final class RayVenvPython {
  private RayVenvPython() {}

  /**
   * Runs {@code python ARGS} in {@code workers/src/main/python} with {@code RAVEL_RAY_VENV}'s interpreter and
   * returns its standard output; fails the test when it exits non-zero (with its standard error) or runs past 300 s.
   *
   * @param tmp where its output is kept while it runs
   */
  public static String run(Path tmp, List<String> args) throws IOException, InterruptedException {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getenv("RAVEL_RAY_VENV"), "bin", "python").toString()));
    cmd.addAll(args);
    Path out = Files.createTempFile(tmp, "py", ".out");
    Path err = Files.createTempFile(tmp, "py", ".err");
    Process p = new ProcessBuilder(cmd).directory(home.resolve("workers/src/main/python").toFile())
        .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    try {
      assertThat(p.waitFor(300, TimeUnit.SECONDS)).as("python %s finished", args).isTrue();
      assertThat(p.exitValue()).as("python %s; stderr:%n%s", args, Files.readString(err)).isZero();
      return Files.readString(out, StandardCharsets.UTF_8);
    } finally {
      p.destroyForcibly(); // its own process, by handle; a no-op once it has exited
    }
  }
}
