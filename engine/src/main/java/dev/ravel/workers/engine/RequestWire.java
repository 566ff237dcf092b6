package dev.ravel.workers.engine;

import dev.ravel.telemetry.context.TraceCarrier;
import java.io.Serial;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.List;
import java.util.RandomAccess;

/**
 * A generate call's requests on their way to a Java generation worker: {@link #serializable} wraps them in a list
 * that Java serialization writes as one packed little-endian buffer (prompt tokens as an {@code int} array, the
 * sampling parameters and the carrier as fixed fields) rather than object by object, which costs the driver and
 * the worker little even before the JIT compiles anything. The receiver gets a plain {@link ArrayList}. Only the
 * Java path uses it: a Python worker's requests go as the JSON of {@code docs/python-workers.md}.
 */
public final class RequestWire {
  private RequestWire() {}

  /**
   * {@code requests} as a list that Java-serializes as their packed form.
   *
   * @param requests the requests, none null
   * @return a read-only view of them
   */
  public static List<GenerationRequest> serializable(List<GenerationRequest> requests) {
    return requests instanceof WireList ? requests : new WireList(requests);
  }

  static byte[] encode(List<GenerationRequest> requests) {
    List<byte[]> strings = new ArrayList<>(requests.size() * 4);
    int size = 4;
    for (GenerationRequest r : requests) {
      TraceCarrier c = r.carrier();
      for (String s : new String[] {r.requestId(), c.traceparent(), c.tracestate(), c.baggage()}) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        strings.add(b);
        size += 4 + b.length;
      }
      size += 4 + 4 * r.promptRef().length + 4 + 8 + 8 + 8 + 1;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(requests.size());
    int k = 0;
    for (GenerationRequest r : requests) {
      byte[] id = strings.get(k++);
      b.putInt(id.length).put(id);
      int[] prompt = r.promptRef();
      b.putInt(prompt.length);
      b.asIntBuffer().put(prompt);
      b.position(b.position() + 4 * prompt.length);
      SamplingParams p = r.params();
      b.putInt(p.maxTokens()).putDouble(p.temperature()).putDouble(p.topP()).putLong(p.seed())
          .put((byte) (p.ignoreEos() ? 1 : 0));
      for (int i = 0; i < 3; i++) {
        byte[] s = strings.get(k++);
        b.putInt(s.length).put(s);
      }
    }
    return b.array();
  }

  static List<GenerationRequest> decode(byte[] bytes) {
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    int n = b.getInt();
    List<GenerationRequest> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String id = string(b);
      int[] prompt = new int[b.getInt()];
      b.asIntBuffer().get(prompt);
      b.position(b.position() + 4 * prompt.length);
      SamplingParams p = SamplingParams.builder().maxTokens(b.getInt()).temperature(b.getDouble()).topP(b.getDouble())
          .seed(b.getLong()).ignoreEos(b.get() != 0).build();
      TraceCarrier c = TraceCarrier.of(string(b), string(b), string(b));
      out.add(GenerationRequest.of(id, prompt, p, c));
    }
    if (b.hasRemaining()) {
      throw new IllegalArgumentException(b.remaining() + " byte(s) after the last of " + n + " requests");
    }
    return out;
  }

  private static String string(ByteBuffer b) {
    int n = b.getInt();
    String s = new String(b.array(), b.position(), n, StandardCharsets.UTF_8);
    b.position(b.position() + n);
    return s;
  }

  private static final class WireList extends AbstractList<GenerationRequest> implements RandomAccess, Serializable {
    @Serial
    private static final long serialVersionUID = 1L;
    private final transient List<GenerationRequest> requests;

    WireList(List<GenerationRequest> requests) {
      this.requests = requests;
    }

    @Override
    public GenerationRequest get(int index) {
      return requests.get(index);
    }

    @Override
    public int size() {
      return requests.size();
    }

    @Serial
    private Object writeReplace() {
      return new Bytes(encode(requests));
    }
  }

  /** What a {@link WireList} serializes as: its bytes, read back as an {@link ArrayList}. */
  private static final class Bytes implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;
    private final byte[] wire;

    Bytes(byte[] wire) {
      this.wire = wire;
    }

    @Serial
    private Object readResolve() {
      return decode(wire);
    }
  }
}
