package dev.ravel.driver.cli;

import dev.ravel.telemetry.config.ConfigException;
import picocli.CommandLine;

/**
 * Turns a failure into one clear line on stderr: a bad command line or configuration exits with
 * {@link ExitCodes#USAGE}, anything else with {@link ExitCodes#FAILED}. No stack trace unless
 * {@code RAVEL_DEBUG} is set.
 */
final class Errors implements CommandLine.IExecutionExceptionHandler, CommandLine.IParameterExceptionHandler {
  @Override
  public int handleExecutionException(Exception e, CommandLine cl, CommandLine.ParseResult parsed) {
    if (e instanceof ConfigException) {
      cl.getErr().println("ravel: invalid configuration: " + oneLine(e.getMessage()));
      return ExitCodes.USAGE;
    }
    cl.getErr().println("ravel: " + oneLine(e.getMessage() == null ? e.toString() : e.getMessage()));
    if (System.getenv("RAVEL_DEBUG") != null) {
      e.printStackTrace(cl.getErr());
    }
    return ExitCodes.FAILED;
  }

  /** A usage error: what was wrong and where the help is, on one line (not the whole usage text). */
  @Override
  public int handleParseException(CommandLine.ParameterException e, String[] args) {
    CommandLine cl = e.getCommandLine();
    String name = cl.getCommandSpec().qualifiedName();
    cl.getErr().println(name + ": " + oneLine(e.getMessage()) + " (see '" + name + " --help')");
    return ExitCodes.USAGE;
  }

  /** The first line of {@code message}, trimmed: a message is one line of the terminal. */
  static String oneLine(String message) {
    if (message == null) {
      return "";
    }
    String m = message.strip();
    int nl = m.indexOf('\n');
    return (nl < 0 ? m : m.substring(0, nl)).strip();
  }
}
