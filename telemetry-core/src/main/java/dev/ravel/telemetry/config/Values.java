package dev.ravel.telemetry.config;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** Converts YAML scalars and environment strings to typed values; every error names the key. */
public final class Values {
  private Values() {}

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

  /** A YAML list of strings, or one comma-separated string. */
  public static List<String> list(String key, Object value) {
    if (value instanceof List<?> l) {
      List<String> out = new ArrayList<>();
      for (Object o : l) {
        out.add(string(key, o));
      }
      return out;
    }
    if (value instanceof String s) {
      if (s.isBlank()) {
        return List.of();
      }
      return Arrays.stream(s.split(",")).map(String::trim).filter(x -> !x.isEmpty()).toList();
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
