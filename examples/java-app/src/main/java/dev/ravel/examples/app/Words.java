package dev.ravel.examples.app;

import java.io.Serializable;
import java.util.List;

/**
 * Words on their way through the pipeline: a record here, a dataclass with the fields {@code items} and
 * {@code hops} in Python. Between Java actors it travels by Java serialization, to and from Python as JSON.
 *
 * @param items the words
 * @param hops the actors the words went through, in order
 */
public record Words(List<String> items, List<String> hops) implements Serializable {
  /** Words that went through no actor yet. */
  public static Words of(String... items) {
    return new Words(List.of(items), List.of());
  }
}
