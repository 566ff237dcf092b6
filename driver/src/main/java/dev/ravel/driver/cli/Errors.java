package dev.ravel.driver.cli;

import dev.ravel.telemetry.config.ConfigException;
import picocli.CommandLine;

/** Turns a failure into one clear line on stderr and exit code 2 (bad input) or 1 (anything else). */
final class Errors implements CommandLine.IExecutionExceptionHandler {
  @Override
  public int handleExecutionException(Exception e, CommandLine cl, CommandLine.ParseResult parsed) {
    if (e instanceof ConfigException) {
      cl.getErr().println("ravel: invalid configuration: " + e.getMessage());
      return 2;
    }
    cl.getErr().println("ravel: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
    if (System.getenv("RAVEL_DEBUG") != null) {
      e.printStackTrace(cl.getErr());
    }
    return 1;
  }
}
