package dev.ravel.workers.actor;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.UncheckedIOException;

/**
 * Arguments and results of actor calls travel as Java serialization bytes inside Ray's own encoding:
 * Ray's serializer (FST) cannot rebuild records or immutable collections on JDK 17, Java serialization
 * can, and Ray then only moves a byte array.
 */
final class Codec {
  private Codec() {}

  static byte[] encode(Object value) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(value);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot send " + (value == null ? "null" : value.getClass().getName())
          + " to or from an actor: " + e, e);
    }
    return bytes.toByteArray();
  }

  static Object decode(byte[] bytes) {
    try (ObjectInputStream in = new Input(new ByteArrayInputStream(bytes))) {
      return in.readObject();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read an actor call's payload", e);
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("class of an actor call's payload not found: " + e.getMessage(), e);
    }
  }

  /** Resolves classes with the loader that loaded Ravel's workers (the job's code search path). */
  private static final class Input extends ObjectInputStream {
    Input(InputStream in) throws IOException {
      super(in);
    }

    @Override
    protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
      try {
        return Class.forName(desc.getName(), false, Codec.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        return super.resolveClass(desc);
      }
    }
  }
}
