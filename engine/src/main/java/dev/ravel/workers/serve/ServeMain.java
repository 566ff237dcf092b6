package dev.ravel.workers.serve;

import dev.ravel.telemetry.config.ConfigException;
import picocli.CommandLine;

/**
 * {@code java -cp <workers jar>:<worker-lib>/* dev.ravel.workers.serve.ServeMain [options]}: runs
 * {@link ServeCommand} and exits with its code (0 after a clean stop, 2 for bad input, 1 for another
 * failure, printed as one line on stderr).
 */
public final class ServeMain {
  private ServeMain() {}

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs {@code ravel serve} with {@code args}; returns the exit code. */
  static int run(String[] args) {
    return commandLine(new ServeCommand()).execute(args);
  }

  static CommandLine commandLine(ServeCommand command) {
    return new CommandLine(command).setExecutionExceptionHandler((e, cl, parsed) -> {
      boolean badInput = e instanceof ConfigException || e instanceof IllegalArgumentException;
      cl.getErr().println("ravel serve: " + (e instanceof ConfigException ? "invalid configuration: " : "")
          + (e.getMessage() == null ? e.toString() : e.getMessage()));
      if (System.getenv("RAVEL_DEBUG") != null) {
        e.printStackTrace(cl.getErr());
      }
      return badInput ? 2 : 1;
    });
  }
}
