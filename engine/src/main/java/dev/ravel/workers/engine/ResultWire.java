package dev.ravel.workers.engine;

import java.io.Serial;
import java.io.Serializable;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.List;
import java.util.RandomAccess;

/**
 * The binary wire form of a generate call's results, the same from a Java and a Python generation worker
 * ({@code contract.json}, section {@code result_wire}; {@code ravel_workers.wire.results} in Python). Token ids
 * and log-probs travel as packed little-endian arrays rather than as JSON numbers or Java-serialized objects:
 * the driver reads a step's results with a few loops over one buffer, which costs little even before the JIT
 * has compiled anything (an eight-step run never warms a per-object decoder up).
 *
 * <p>Layout, all little-endian: the 4 bytes {@link #MAGIC}, {@code i32} count, then per result: string request
 * id; {@code i32 n, i32[n]} prompt tokens; {@code i32 n, i32[n]} completion tokens; {@code i32 n, f32[n]}
 * log-probs; string finish reason (its wire name); {@code i64} weight version; {@code i64} arrival, scheduled,
 * first-token and finish epoch nanoseconds, prefill and decode nanoseconds; {@code i32} preemptions, prompt
 * tokens, completion tokens; {@code u8} traced (0 or 1); string error ({@code i32 -1}: none); {@code i32 n} version
 * spans, each {@code i64} version, {@code i32} start, {@code i32} end. A string is {@code i32} byte length and its
 * UTF-8 bytes.
 */
public final class ResultWire {
  /** The first four bytes of the wire form ({@code RVG1}): a JSON answer cannot start with them. */
  public static final String MAGIC = "RVG1";

  private static final byte[] MAGIC_BYTES = MAGIC.getBytes(StandardCharsets.US_ASCII);

  private ResultWire() {}

  /**
   * Whether {@code bytes} start with {@link #MAGIC}.
   *
   * @param bytes an answer's bytes; may be {@code null}
   * @return true for the binary wire form
   */
  public static boolean isWire(byte[] bytes) {
    if (bytes == null || bytes.length < MAGIC_BYTES.length) {
      return false;
    }
    for (int i = 0; i < MAGIC_BYTES.length; i++) {
      if (bytes[i] != MAGIC_BYTES[i]) {
        return false;
      }
    }
    return true;
  }

  /**
   * The wire form of {@code results}.
   *
   * @param results the results, none null
   * @return their bytes
   */
  public static byte[] encode(List<GenerationResult> results) {
    List<byte[]> strings = new ArrayList<>(results.size() * 3);
    int size = MAGIC_BYTES.length + 4;
    for (GenerationResult r : results) {
      byte[] id = utf8(r.requestId());
      byte[] reason = utf8(r.finishReason().wireName());
      byte[] error = r.error() == null ? null : utf8(r.error());
      strings.add(id);
      strings.add(reason);
      strings.add(error);
      size += 4 + id.length + 4 + 4 * r.promptTokenCount() + 4 + 4 * r.completionTokenCount() + 4
          + 4 * r.completionTokenCount() + 4 + reason.length + 8 + 6 * 8 + 3 * 4 + 1 + 4
          + (error == null ? 0 : error.length) + 4 + r.versionSpans().size() * 16;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.put(MAGIC_BYTES).putInt(results.size());
    int k = 0;
    for (GenerationResult r : results) {
      putString(b, strings.get(k++));
      r.writeTokens(b);
      putString(b, strings.get(k++));
      b.putLong(r.weightVersion());
      RequestStats s = r.stats();
      b.putLong(s.arrivalEpochNanos()).putLong(s.scheduledEpochNanos()).putLong(s.firstTokenEpochNanos())
          .putLong(s.finishEpochNanos()).putLong(s.prefillNanos()).putLong(s.decodeNanos());
      b.putInt(s.preemptions()).putInt(s.promptTokens()).putInt(s.completionTokens());
      b.put((byte) (r.traced() ? 1 : 0));
      putString(b, strings.get(k++));
      b.putInt(r.versionSpans().size());
      for (VersionSpan v : r.versionSpans()) {
        b.putLong(v.version()).putInt(v.start()).putInt(v.end());
      }
    }
    return b.array();
  }

  /**
   * The results in {@code bytes}.
   *
   * @param bytes the wire form
   * @return the results, in order (a mutable list)
   * @throws IllegalArgumentException when the bytes are not the wire form, are cut short, or hold an invalid result
   */
  public static List<GenerationResult> decode(byte[] bytes) {
    if (!isWire(bytes)) {
      throw new IllegalArgumentException("not generation results in the binary wire form (no " + MAGIC + " header)");
    }
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    b.position(MAGIC_BYTES.length);
    try {
      int n = count(b, 1);
      List<GenerationResult> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        GenerationResult.Builder r = GenerationResult.builder().requestId(getString(b));
        int[] prompt = new int[count(b, 4)];
        b.asIntBuffer().get(prompt);
        b.position(b.position() + 4 * prompt.length);
        int[] completion = new int[count(b, 4)];
        b.asIntBuffer().get(completion);
        b.position(b.position() + 4 * completion.length);
        float[] logprobs = new float[count(b, 4)];
        b.asFloatBuffer().get(logprobs);
        b.position(b.position() + 4 * logprobs.length);
        r.promptTokens(prompt).completionTokens(completion).logprobs(logprobs)
            .finishReason(finishReason(getString(b))).weightVersion(b.getLong());
        r.stats(RequestStats.builder().arrivalEpochNanos(b.getLong()).scheduledEpochNanos(b.getLong())
            .firstTokenEpochNanos(b.getLong()).finishEpochNanos(b.getLong()).prefillNanos(b.getLong())
            .decodeNanos(b.getLong()).preemptions(b.getInt()).promptTokens(b.getInt()).completionTokens(b.getInt())
            .build());
        r.traced(b.get() != 0).error(getString(b));
        int spans = count(b, 16);
        if (spans > 0) {
          List<VersionSpan> v = new ArrayList<>(spans);
          for (int j = 0; j < spans; j++) {
            v.add(new VersionSpan(b.getLong(), b.getInt(), b.getInt()));
          }
          r.versionSpans(v);
        }
        out.add(r.build());
      }
      if (b.hasRemaining()) {
        throw new IllegalArgumentException(b.remaining() + " byte(s) after the last of " + n + " results");
      }
      return out;
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException("generation results cut short at byte " + b.position(), e);
    }
  }

  /**
   * {@code results} as a list that travels in the wire form when Java-serialized (a Java actor's answer): the
   * receiver gets back a plain {@link ArrayList}.
   *
   * @param results the results, none null
   * @return a read-only view of them that serializes as {@link #encode}
   */
  public static List<GenerationResult> serializable(List<GenerationResult> results) {
    return new WireList(results);
  }

  private static final class WireList extends AbstractList<GenerationResult> implements RandomAccess, Serializable {
    @Serial
    private static final long serialVersionUID = 1L;
    private final transient List<GenerationResult> results;

    WireList(List<GenerationResult> results) {
      this.results = results;
    }

    @Override
    public GenerationResult get(int index) {
      return results.get(index);
    }

    @Override
    public int size() {
      return results.size();
    }

    @Serial
    private Object writeReplace() {
      return new Bytes(encode(results));
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

  private static int count(ByteBuffer b, int bytesEach) {
    int n = b.getInt();
    if (n < 0 || (long) n * bytesEach > b.remaining()) {
      throw new IllegalArgumentException("invalid count " + n + " at byte " + (b.position() - 4) + " ("
          + b.remaining() + " byte(s) left)");
    }
    return n;
  }

  private static FinishReason finishReason(String name) {
    for (FinishReason r : FinishReason.values()) {
      if (r.wireName().equals(name)) {
        return r;
      }
    }
    throw new IllegalArgumentException("unknown finish reason '" + name + "'");
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static void putString(ByteBuffer b, byte[] s) {
    if (s == null) {
      b.putInt(-1);
    } else {
      b.putInt(s.length).put(s);
    }
  }

  private static String getString(ByteBuffer b) {
    int n = b.getInt();
    if (n == -1) {
      return null;
    }
    if (n < 0 || n > b.remaining()) {
      throw new IllegalArgumentException("invalid string length " + n + " at byte " + (b.position() - 4));
    }
    String s = new String(b.array(), b.arrayOffset() + b.position(), n, StandardCharsets.UTF_8);
    b.position(b.position() + n);
    return s;
  }
}
