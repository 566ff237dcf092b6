package dev.ravel.driver.jobs;

import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/** POSIX shell quoting for entrypoints (Ray runs an entrypoint with {@code /bin/sh -c}). */
final class Shell {
  private static final Pattern SAFE = Pattern.compile("[A-Za-z0-9_./:=@%+,-]+");

  private Shell() {}

  /** {@code arg} as one shell word: unchanged when it needs no quoting, else in single quotes. */
  static String quote(String arg) {
    if (SAFE.matcher(arg).matches()) {
      return arg;
    }
    return "'" + arg.replace("'", "'\"'\"'") + "'";
  }

  /** The words, each quoted as needed, separated by spaces. */
  static String join(List<String> argv) {
    return argv.stream().map(Shell::quote).collect(Collectors.joining(" "));
  }
}
