package dev.ravel.driver.cli;

import java.util.Map;
import picocli.CommandLine;

/**
 * What the terminal the CLI writes to can do: colour as picocli detects it ({@code NO_COLOR},
 * {@code CLICOLOR}, {@code CLICOLOR_FORCE}, no console), never on {@code TERM=dumb}; lines redrawn in place
 * only on a console that is not dumb; the width from {@code COLUMNS} ({@code bin/ravel} exports it from the
 * terminal when standard output is one), else 120.
 */
final class Terminal {
  static final int DEFAULT_COLUMNS = 120;

  private Terminal() {}

  static boolean colour() {
    return colour(System.getenv(), CommandLine.Help.Ansi.AUTO.enabled());
  }

  static boolean colour(Map<String, String> env, boolean picocliSaysYes) {
    return !dumb(env) && picocliSaysYes;
  }

  /** Whether a progress line may be redrawn in place (a console, not a dumb one). */
  static boolean redraw() {
    return System.console() != null && !dumb(System.getenv());
  }

  static int columns() {
    return columns(System.getenv());
  }

  static int columns(Map<String, String> env) {
    String c = env.get("COLUMNS");
    if (c == null || c.isBlank()) {
      return DEFAULT_COLUMNS;
    }
    try {
      return Math.max(20, Integer.parseInt(c.trim()));
    } catch (NumberFormatException e) {
      return DEFAULT_COLUMNS;
    }
  }

  private static boolean dumb(Map<String, String> env) {
    return "dumb".equals(env.get("TERM"));
  }
}
