package dev.ravel.driver.cli;

import dev.ravel.telemetry.config.TelemetryConfig;
import java.nio.file.Path;
import java.util.Map;

/**
 * Where the commands that read runs ({@code runs}, {@code trace}, {@code report}, {@code export}) look: their
 * {@code --runs-dir}, else {@code RAVEL_TELEMETRY_RUNS_DIR} (where {@code ravel run} wrote them with the same
 * variable set), else {@code runs}. One resolution, so no two commands disagree.
 */
final class RunsFolder {
  private RunsFolder() {}

  /** The option's folder, else the variable's, else the default. */
  static Path resolve(Path option, Map<String, String> env) {
    if (option != null) {
      return option;
    }
    String v = env.get(TelemetryConfig.RUNS_DIR_ENV);
    return v == null || v.isBlank() ? Path.of(TelemetryConfig.DEFAULT_RUNS_DIR) : Path.of(v);
  }

  /** The environment a subcommand reads: its parent command line's (this process's outside tests). */
  static Map<String, String> env(RavelCli cli) {
    return cli == null ? System.getenv() : cli.env();
  }
}
