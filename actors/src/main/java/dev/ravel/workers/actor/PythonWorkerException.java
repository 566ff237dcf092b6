package dev.ravel.workers.actor;

import io.ray.api.exception.CrossLanguageException;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An exception raised by a Python actor's method, as its Java caller sees it: the Python exception's type and
 * message, and the traceback Ray carried across. The actor itself lives on (an application exception does not
 * kill a Ray actor).
 */
public final class PythonWorkerException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private static final Pattern ANSI = Pattern.compile("\u001B\\[[0-9;]*m");
  /** {@code ValueError: message} or {@code pkg.mod.CustomError: message}, at the start of a line. */
  private static final Pattern EXCEPTION_LINE = Pattern.compile("^([A-Za-z_][\\w.]*(?:Error|Exception|Exit|Interrupt"
      + "|Warning|Iteration))(?:: (.*))?$");

  /** The Python exception's type, e.g. {@code ValueError}. */
  private final String pythonType;
  /** The Python exception's message; empty when it had none. */
  private final String pythonMessage;
  /** Ray's report of the Python exception, traceback included, without terminal colour codes. */
  private final String traceback;

  PythonWorkerException(String call, String pythonType, String pythonMessage, String traceback) {
    super(pythonType + ": " + pythonMessage + " (in Python " + call + ")");
    this.pythonType = pythonType;
    this.pythonMessage = pythonMessage;
    this.traceback = traceback;
  }

  /** The exception {@code e} reports, for the call {@code call} (e.g. {@code policy_trainer.train}). */
  static PythonWorkerException of(String call, CrossLanguageException e) {
    String text = ANSI.matcher(String.valueOf(e.getMessage())).replaceAll("");
    List<String> lines = text.lines().toList();
    for (int i = lines.size() - 1; i >= 0; i--) {
      Matcher m = EXCEPTION_LINE.matcher(lines.get(i));
      if (m.matches() && !m.group(1).startsWith("ray.exceptions.")) {
        return new PythonWorkerException(call, m.group(1), m.group(2) == null ? "" : m.group(2), text);
      }
    }
    String last = lines.stream().filter(l -> !l.isBlank()).reduce((a, b) -> b).orElse("unknown error").trim();
    return new PythonWorkerException(call, "PythonError", last, text);
  }

  /** {@return the Python exception's type, e.g. {@code ValueError}} */
  public String pythonType() {
    return pythonType;
  }

  /** {@return the Python exception's message; empty when it had none} */
  public String pythonMessage() {
    return pythonMessage;
  }

  /** {@return Ray's report of the Python exception, traceback included, without terminal colour codes} */
  public String traceback() {
    return traceback;
  }
}
