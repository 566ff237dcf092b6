package dev.ravel.driver.config;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.Values;
import java.util.List;
import java.util.Objects;

/**
 * One run-config key: its section and name, its type, its default, the check its value must pass and the one
 * line that documents it. Every key is a constant of {@link Keys}; {@link RunConfig#get(Key)} returns its value,
 * converted and checked once when the config is read. Immutable.
 *
 * @param <T> the value's Java type
 */
public final class Key<T> {
  /** A value's type: how a YAML scalar or an override's text becomes one, the error naming the key. */
  interface Type<T> {
    T convert(String key, Object raw);
  }

  /** A check of one value on its own; throws a {@link ConfigException} naming the key. */
  interface Check<T> {
    void check(String key, T value);
  }

  /**
   * Numbers and booleans are taken as YAML and the command line type them, never from text: {@code "0.04"} in
   * quotes is a string in YAML, and a key that wants a number says so rather than guess.
   */
  static final Type<Integer> INTEGER = (key, raw) -> Values.intValue(key, notText(key, raw, "a whole number"));
  static final Type<Long> LONG = (key, raw) -> Values.longValue(key, notText(key, raw, "a whole number"));
  static final Type<Double> NUMBER = (key, raw) -> Values.number(key, notText(key, raw, "a number"));
  static final Type<String> STRING = Values::string;
  static final Type<Boolean> BOOLEAN = (key, raw) -> Values.bool(key, notText(key, raw, "true or false"));

  private static Object notText(String key, Object raw, String expected) {
    if (raw instanceof String s) {
      throw new ConfigException(key, "expected " + expected + ", got the text '" + s + "'"
          + (s.isBlank() ? "" : " (in YAML a quoted value is text: write it without quotes)"));
    }
    return raw;
  }
  static final Type<List<String>> LIST = Values::list;

  private final String section;
  private final String name;
  private final Type<T> type;
  private final T defaultValue;
  private final Check<T> check;
  private final String doc;

  Key(String section, String name, Type<T> type, T defaultValue, Check<T> check, String doc) {
    this.section = Objects.requireNonNull(section);
    this.name = Objects.requireNonNull(name);
    this.type = Objects.requireNonNull(type);
    this.defaultValue = Objects.requireNonNull(defaultValue);
    this.check = Objects.requireNonNull(check);
    if (doc == null || doc.isBlank()) {
      throw new IllegalArgumentException(section + "." + name + ": every key has a doc line");
    }
    this.doc = doc;
  }

  /** The section, as written in the YAML file ({@code grpo}). */
  public String section() {
    return section;
  }

  /** The key within its section ({@code steps}). */
  public String name() {
    return name;
  }

  /** {@code section.name}, as written in an override and in every error about this key. */
  public String dotted() {
    return section + "." + name;
  }

  /** The value when neither the file nor the command line sets one. */
  public T defaultValue() {
    return defaultValue;
  }

  /** One line saying what the key does, as the README's configuration tables print it. */
  public String doc() {
    return doc;
  }

  /** {@code raw} (a YAML scalar, an override's value) as this key's type, checked. */
  T read(Object raw) {
    T v = type.convert(dotted(), raw);
    check.check(dotted(), v);
    return v;
  }

  @Override
  public String toString() {
    return dotted();
  }

  // ---- checks ----

  static <T> Check<T> any() {
    return (key, v) -> { };
  }

  static Check<Integer> atLeast(int min) {
    return (key, v) -> {
      if (v < min) {
        throw new ConfigException(key, "must be at least " + min + ", got " + v);
      }
    };
  }

  static Check<Integer> notNegative() {
    return (key, v) -> {
      if (v < 0) {
        throw new ConfigException(key, "must not be negative, got " + v);
      }
    };
  }

  static Check<Integer> between(int min, int max) {
    return (key, v) -> {
      if (v < min || v > max) {
        throw new ConfigException(key, "must be between " + min + " and " + max + ", got " + v);
      }
    };
  }

  /** {@code (min, max]}, or {@code [min, max]} when {@code minInclusive}. */
  static Check<Double> in(double min, double max, boolean minInclusive) {
    return (key, v) -> {
      if (!(minInclusive ? v >= min : v > min) || v > max) {
        throw new ConfigException(key, "must be in " + (minInclusive ? "[" : "(") + min + ", " + max + "], got " + v);
      }
    };
  }

  /** One of {@code valid}; the error calls the value an unknown {@code noun}. */
  static Check<String> oneOf(String noun, List<String> valid) {
    List<String> copy = List.copyOf(valid);
    return (key, v) -> {
      if (!copy.contains(v)) {
        throw new ConfigException(key, "unknown " + noun + " '" + v + "' (valid: " + String.join(", ", copy) + ")");
      }
    };
  }

  /** A duration in seconds, more than 0. */
  static Check<Double> seconds() {
    return (key, v) -> {
      if (!(v > 0) || v.isInfinite()) {
        throw new ConfigException(key, "must be a positive number of seconds, got " + v);
      }
    };
  }

  static Check<String> notBlank() {
    return (key, v) -> {
      if (v.isBlank()) {
        throw new ConfigException(key, "must not be empty");
      }
    };
  }
}
