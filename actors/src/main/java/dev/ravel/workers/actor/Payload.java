package dev.ravel.workers.actor;

import java.io.Serializable;

/**
 * A value in Java serialization form, for values that travel through Ray outside an actor call's
 * arguments (for example weights put once in the object store with {@code Ray.put}): Ray then moves only
 * bytes, and records and immutable collections survive.
 */
public final class Payload<T> implements Serializable {
  private static final long serialVersionUID = 1L;
  private final byte[] bytes;

  private Payload(byte[] bytes) {
    this.bytes = bytes;
  }

  public static <T> Payload<T> of(T value) {
    return new Payload<>(Codec.encode(value));
  }

  @SuppressWarnings("unchecked")
  public T value() {
    return (T) Codec.decode(bytes);
  }

  /** Size in bytes. */
  public int size() {
    return bytes.length;
  }
}
