package dev.ravel.workers.actor;

import dev.ravel.telemetry.context.TraceCarrier;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.StreamCorruptedException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Arguments and results of actor calls travel as bytes inside Ray's own encoding, so that Ray only moves a
 * byte array. A value of a common simple type ({@code null}, {@code byte[]}, {@link String}, a boxed
 * {@code int}, {@code long}, {@code double}, {@code float} or {@code boolean}), a call's argument array and the
 * call itself ({@link ActorInvocation}) are written in a compact tagged form of their own: Java serialization
 * of them costs tens of microseconds a call on each side (class descriptors written and read back, each class
 * looked up by name), which a profile of {@code ravel bench-calls} showed as most of what Ravel adds to a
 * plain Ray call. Any other value travels as Java serialization bytes (Ray's serializer, FST, cannot rebuild
 * records or immutable collections on JDK 17; Java serialization can): those begin with its magic number
 * {@code 0xACED}, which no tag of the compact form takes, so the first byte tells the two apart.
 */
final class Codec {
  /** The compact form's tags, each the first byte of an encoded value. */
  static final byte NULL = 1;
  static final byte BYTES = 2;
  static final byte STRING = 3;
  static final byte INT = 4;
  static final byte LONG = 5;
  static final byte DOUBLE = 6;
  static final byte FLOAT = 7;
  static final byte BOOLEAN = 8;
  /** An {@code Object[]}: its length, then each element encoded (its length, then its bytes). */
  static final byte ARRAY = 9;
  /** An {@link ActorInvocation}: carrier, method, descriptor, then its encoded argument array. */
  static final byte INVOCATION = 10;
  /** The first byte of Java serialization's stream header ({@code 0xACED}). */
  static final byte JAVA = (byte) 0xAC;

  /** Longest string written with {@link DataOutputStream#writeUTF} (at most 3 bytes a char, 65535 in all). */
  private static final int SHORT_STRING = 65535 / 3;

  private Codec() {}

  static byte[] encode(Object value) {
    if (value == null) {
      return new byte[] {NULL};
    }
    Class<?> c = value.getClass();
    if (c == byte[].class) {
      byte[] b = (byte[]) value;
      byte[] out = new byte[5 + b.length];
      out[0] = BYTES;
      putInt(out, 1, b.length);
      System.arraycopy(b, 0, out, 5, b.length);
      return out;
    }
    if (c == Integer.class) {
      byte[] out = new byte[5];
      out[0] = INT;
      putInt(out, 1, (Integer) value);
      return out;
    }
    if (c == Long.class) {
      return eight(LONG, (Long) value);
    }
    if (c == Double.class) {
      return eight(DOUBLE, Double.doubleToRawLongBits((Double) value));
    }
    if (c == Float.class) {
      byte[] out = new byte[5];
      out[0] = FLOAT;
      putInt(out, 1, Float.floatToRawIntBits((Float) value));
      return out;
    }
    if (c == Boolean.class) {
      return new byte[] {BOOLEAN, (byte) ((Boolean) value ? 1 : 0)};
    }
    if ((c == String.class && ((String) value).length() <= SHORT_STRING) || c == Object[].class
        || c == ActorInvocation.class) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        if (c == String.class) {
          out.writeByte(STRING);
          out.writeUTF((String) value);
        } else if (c == Object[].class) {
          Object[] a = (Object[]) value;
          out.writeByte(ARRAY);
          out.writeInt(a.length);
          for (Object x : a) {
            byte[] e = encode(x);
            out.writeInt(e.length);
            out.write(e);
          }
        } else {
          ActorInvocation call = (ActorInvocation) value;
          out.writeByte(INVOCATION);
          writeText(out, call.carrier().traceparent());
          writeText(out, call.carrier().tracestate());
          writeText(out, call.carrier().baggage());
          writeText(out, call.method());
          writeText(out, call.descriptor());
          byte[] args = call.encodedArgs();
          out.writeInt(args.length);
          out.write(args);
        }
      } catch (IOException e) {
        throw new IllegalStateException("cannot write to memory", e); // a ByteArrayOutputStream does not fail
      }
      return bytes.toByteArray();
    }
    return javaSerialize(value);
  }

  static Object decode(byte[] bytes) {
    if (bytes.length > 0 && bytes[0] == JAVA) {
      return javaDeserialize(bytes);
    }
    try {
      DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
      Object value = read(in);
      if (in.available() > 0) {
        throw new StreamCorruptedException(in.available() + " bytes after the value");
      }
      return value;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read an actor call's payload", e);
    }
  }

  private static Object read(DataInputStream in) throws IOException {
    byte tag = in.readByte();
    switch (tag) {
      case NULL:
        return null;
      case BYTES: {
        byte[] b = new byte[length(in)];
        in.readFully(b);
        return b;
      }
      case STRING:
        return in.readUTF();
      case INT:
        return in.readInt();
      case LONG:
        return in.readLong();
      case DOUBLE:
        return Double.longBitsToDouble(in.readLong());
      case FLOAT:
        return Float.intBitsToFloat(in.readInt());
      case BOOLEAN:
        return in.readByte() != 0;
      case ARRAY: {
        Object[] a = new Object[length(in)];
        for (int i = 0; i < a.length; i++) {
          a[i] = element(in);
        }
        return a;
      }
      case INVOCATION: {
        TraceCarrier carrier = TraceCarrier.of(readText(in), readText(in), readText(in));
        String method = readText(in);
        String descriptor = readText(in);
        byte[] args = new byte[length(in)];
        in.readFully(args);
        return ActorInvocation.encoded(carrier, method, descriptor, args);
      }
      default:
        throw new StreamCorruptedException("unknown tag " + tag);
    }
  }

  /** An element of an array: its own encoding (compact or Java serialization), length first. */
  private static Object element(DataInputStream in) throws IOException {
    byte[] e = new byte[length(in)];
    in.readFully(e);
    if (e.length > 0 && e[0] == JAVA) {
      return javaDeserialize(e);
    }
    DataInputStream inner = new DataInputStream(new ByteArrayInputStream(e));
    Object value = read(inner);
    if (inner.available() > 0) {
      throw new StreamCorruptedException(inner.available() + " bytes after an array element");
    }
    return value;
  }

  /** A length that the bytes left can hold (a corrupt length fails here, not as an out-of-memory error). */
  private static int length(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > in.available()) {
      throw n < 0 ? new StreamCorruptedException("negative length " + n) : new EOFException("length " + n
          + " past the end");
    }
    return n;
  }

  /** A string of any length: {@code writeUTF} when it fits (a 0 byte first), else its chars (a 1 byte first). */
  private static void writeText(DataOutputStream out, String s) throws IOException {
    if (s.length() <= SHORT_STRING) {
      out.writeByte(0);
      out.writeUTF(s);
    } else {
      out.writeByte(1);
      out.writeInt(s.length());
      out.writeChars(s);
    }
  }

  private static String readText(DataInputStream in) throws IOException {
    if (in.readByte() == 0) {
      return in.readUTF();
    }
    int n = in.readInt();
    if (n < 0 || n > in.available() / 2) {
      throw new StreamCorruptedException("string length " + n);
    }
    char[] c = new char[n];
    for (int i = 0; i < n; i++) {
      c[i] = in.readChar();
    }
    return new String(c);
  }

  private static byte[] eight(byte tag, long v) {
    byte[] out = new byte[9];
    out[0] = tag;
    putInt(out, 1, (int) (v >>> 32));
    putInt(out, 5, (int) v);
    return out;
  }

  private static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  private static byte[] javaSerialize(Object value) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(value);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot send " + value.getClass().getName()
          + " to or from an actor: " + e, e);
    }
    return bytes.toByteArray();
  }

  private static Object javaDeserialize(byte[] bytes) {
    try (ObjectInputStream in = new Input(new ByteArrayInputStream(bytes))) {
      return in.readObject();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read an actor call's payload", e);
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("class of an actor call's payload not found: " + e.getMessage(), e);
    }
  }

  /** Classes found by name with Ravel's loader, so each is looked up once per process, not once per value. */
  private static final Map<String, Class<?>> CLASSES = new ConcurrentHashMap<>();

  /** Resolves classes with the loader that loaded Ravel's workers (the job's code search path). */
  private static final class Input extends ObjectInputStream {
    Input(InputStream in) throws IOException {
      super(in);
    }

    @Override
    protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
      Class<?> known = CLASSES.get(desc.getName());
      if (known != null) {
        return known;
      }
      try {
        Class<?> c = Class.forName(desc.getName(), false, Codec.class.getClassLoader());
        CLASSES.put(desc.getName(), c);
        return c;
      } catch (ClassNotFoundException e) {
        return super.resolveClass(desc);
      }
    }
  }
}
