package dev.ravel.workers.actor;

import java.io.Serializable;

/**
 * A value in Java serialization form, for values that travel through Ray outside an actor call's
 * arguments (for example weights put once in the object store with {@code Ray.put}): Ray then moves only
 * bytes, and records and immutable collections survive.
 *
 * @param <T> the type of the value
 */
public final class Payload<T> implements Serializable {
  private static final long serialVersionUID = 1L;
  /** The value in Java serialization form. */
  private final byte[] bytes;

  private Payload(byte[] bytes) {
    this.bytes = bytes;
  }

  /**
   * The payload of {@code value}, serialized now.
   *
   * @param <T> the type of the value
   * @param value the value to carry, serializable by Java serialization; may be {@code null}
   * @return the payload holding {@code value}'s bytes
   * @throws IllegalArgumentException if {@code value} cannot be serialized
   */
  public static <T> Payload<T> of(T value) {
    return new Payload<>(Codec.encode(value));
  }

  /**
   * Deserializes the value; every call yields a new copy.
   *
   * @return the value this payload carries
   * @throws java.io.UncheckedIOException if the bytes cannot be read
   * @throws IllegalStateException if the value's class is not found
   */
  @SuppressWarnings("unchecked")
  public T value() {
    return (T) Codec.decode(bytes);
  }

  /** {@return the size of the serialized value, in bytes} */
  public int size() {
    return bytes.length;
  }
}
