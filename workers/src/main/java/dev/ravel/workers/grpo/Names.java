package dev.ravel.workers.grpo;

import java.util.Arrays;
import java.util.function.Function;
import java.util.stream.Collectors;

/** Parsing of the GRPO settings' named choices. */
final class Names {
  private Names() {}

  static <E extends Enum<E>> E parse(Class<E> type, String name, Function<E, String> configName) {
    for (E e : type.getEnumConstants()) {
      if (configName.apply(e).equals(name)) {
        return e;
      }
    }
    throw new IllegalArgumentException("unknown value '" + name + "' (valid: "
        + Arrays.stream(type.getEnumConstants()).map(configName).collect(Collectors.joining(", ")) + ")");
  }
}
