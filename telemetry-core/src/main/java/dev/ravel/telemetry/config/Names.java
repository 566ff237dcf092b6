package dev.ravel.telemetry.config;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

final class Names {
  private Names() {}

  static String of(Enum<?>[] values) {
    return Arrays.stream(values)
        .map(v -> v.name().toLowerCase(Locale.ROOT))
        .collect(Collectors.joining(", "));
  }
}
