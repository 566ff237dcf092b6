package dev.ravel.telemetry.config;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** Converts YAML scalars and environment strings to typed values; every error names the key. */
public final class Values {
  private Values() {}

  /**
   * {@code key=value} pairs separated by commas, as {@code OTEL_RESOURCE_ATTRIBUTES} and
   * {@code OTEL_EXPORTER_OTLP_HEADERS} spell them: keys and values trimmed, values percent-decoded ({@code +}
   * stays {@code +}), blank entries skipped, later keys win. Errors name the entry by position and never
   * print a value (it may be a secret).
   */
  public static java.util.LinkedHashMap<String, String> pairs(String key, String text) {
    java.util.LinkedHashMap<String, String> out = new java.util.LinkedHashMap<>();
    String[] parts = text.split(",");
    for (int i = 0; i < parts.length; i++) {
      String part = parts[i].trim();
      if (part.isEmpty()) {
        continue;
      }
      int eq = part.indexOf('=');
      if (eq <= 0 || part.substring(0, eq).isBlank()) {
        throw new ConfigException(key, "entry " + (i + 1) + " is not of the form key=value");
      }
      String name = part.substring(0, eq).trim();
      try {
        out.put(name, java.net.URLDecoder.decode(part.substring(eq + 1).trim().replace("+", "%2B"),
            java.nio.charset.StandardCharsets.UTF_8));
      } catch (IllegalArgumentException e) {
        throw new ConfigException(key, "entry " + (i + 1) + " (" + name + ") has a malformed %-escape");
      }
    }
    return out;
  }

  public static String string(String key, Object value) {
    if (value instanceof String s) {
      return s;
    }
    if (value instanceof Number || value instanceof Boolean) {
      return value.toString();
    }
    throw new ConfigException(key, "expected a string, got " + describe(value));
  }

  public static boolean bool(String key, Object value) {
    if (value instanceof Boolean b) {
      return b;
    }
    if (value instanceof String s) {
      switch (s.trim().toLowerCase(Locale.ROOT)) {
        case "true", "yes", "on", "1":
          return true;
        case "false", "no", "off", "0":
          return false;
        default:
          break;
      }
    }
    throw new ConfigException(key, "expected true or false, got " + describe(value));
  }

  public static double number(String key, Object value) {
    if (value instanceof Number n) {
      return n.doubleValue();
    }
    if (value instanceof String s) {
      try {
        return Double.parseDouble(s.trim());
      } catch (NumberFormatException e) {
        // fall through to the error below
      }
    }
    throw new ConfigException(key, "expected a number, got " + describe(value));
  }

  public static long longValue(String key, Object value) {
    if (value instanceof Integer || value instanceof Long || value instanceof Short) {
      return ((Number) value).longValue();
    }
    if (value instanceof String s) {
      try {
        return Long.parseLong(s.trim());
      } catch (NumberFormatException e) {
        // fall through to the error below
      }
    }
    throw new ConfigException(key, "expected a whole number, got " + describe(value));
  }

  public static int intValue(String key, Object value) {
    long v = longValue(key, value);
    if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
      throw new ConfigException(key, "out of range: " + v);
    }
    return (int) v;
  }

  /** A YAML list of strings, or one comma-separated string (in brackets or not: {@code [a, b]} or {@code a,b}). */
  public static List<String> list(String key, Object value) {
    if (value instanceof List<?> l) {
      List<String> out = new ArrayList<>();
      for (Object o : l) {
        out.add(string(key, o));
      }
      return out;
    }
    if (value instanceof String s) {
      String t = s.strip();
      if (t.startsWith("[") && t.endsWith("]")) {
        t = t.substring(1, t.length() - 1);
      }
      if (t.isBlank()) {
        return List.of();
      }
      return Arrays.stream(t.split(",")).map(String::trim).filter(x -> !x.isEmpty()).toList();
    }
    throw new ConfigException(key, "expected a list, got " + describe(value));
  }

  static String describe(Object value) {
    if (value instanceof String s) {
      return "'" + s + "'";
    }
    return value == null ? "nothing" : value.getClass().getSimpleName().toLowerCase(Locale.ROOT) + " " + value;
  }
}
