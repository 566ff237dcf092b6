package dev.ravel.driver.grpo;

import dev.ravel.driver.session.RayVersions;
import dev.ravel.workers.serve.RavelVersion;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.resources.Resource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** What a run ran on, for {@code run.json}: Ravel's version and git commit, and the Java, Ray and OpenTelemetry versions. */
public final class RunVersions {
  private static final String UNKNOWN = "unknown";

  private RunVersions() {}

  /** The versions, {@code unknown} where one cannot be told; the commit of the checkout at {@code ravelHome}. */
  public static Map<String, String> of(Path ravelHome) {
    Map<String, String> v = new LinkedHashMap<>();
    v.put("ravel", RavelVersion.get());
    v.put("git_commit", gitCommit(ravelHome));
    v.put("java", System.getProperty("java.version") + " (" + System.getProperty("java.vendor") + ")");
    v.put("ray", RayVersions.driverVersion().orElse(UNKNOWN));
    String otel = Resource.getDefault().getAttribute(AttributeKey.stringKey("telemetry.sdk.version"));
    v.put("opentelemetry", otel == null ? UNKNOWN : otel);
    return v;
  }

  /** {@code git rev-parse HEAD} in {@code home} (at most 5 s), with {@code -dirty} when files are changed. */
  static String gitCommit(Path home) {
    if (home == null || !Files.exists(home.resolve(".git"))) {
      return UNKNOWN;
    }
    String head = git(home, "rev-parse", "HEAD");
    if (head == null || !head.matches("[0-9a-f]{40}")) {
      return UNKNOWN;
    }
    String status = git(home, "status", "--porcelain", "--untracked-files=no");
    if (status == null) {
      return head + " (changes unknown)";
    }
    return status.isEmpty() ? head : head + "-dirty";
  }

  private static String git(Path home, String... args) {
    String[] cmd = new String[args.length + 3];
    cmd[0] = "git";
    cmd[1] = "-C";
    cmd[2] = home.toString();
    System.arraycopy(args, 0, cmd, 3, args.length);
    Path out = null;
    try {
      // the output goes to a file, so a long listing cannot fill a pipe while we wait
      out = Files.createTempFile("ravel-git", ".out");
      Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile())
          .redirectError(ProcessBuilder.Redirect.DISCARD).start();
      p.getOutputStream().close();
      if (!p.waitFor(5, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return null;
      }
      return p.exitValue() == 0 ? Files.readString(out, StandardCharsets.UTF_8).trim() : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    } finally {
      if (out != null) {
        try {
          Files.deleteIfExists(out);
        } catch (IOException e) {
          // a temporary file left behind
        }
      }
    }
  }
}
