package dev.ravel.workers.engine;

import dev.ravel.telemetry.spans.SpanNames;
import java.util.Arrays;

/**
 * The lifecycle of one request as the scheduler saw it: a list of phases, each from the instant it began to
 * the instant the next one began (the last one to the request's finish), so that together they cover the
 * request from arrival to finish without a gap or an overlap. The request's {@code llm_request} span gets one
 * child per phase when it finishes ({@link RequestTelemetry}); nothing is open across scheduler iterations.
 *
 * <ul>
 *   <li>{@link Kind#QUEUED}: from arrival to the first admission;</li>
 *   <li>{@link Kind#PREFILL}: from an admission, or a weight update that recomputed the running request's
 *       cache, to the first token sampled after it (its input tokens, whether it recomputes, its version);</li>
 *   <li>{@link Kind#DECODE}: from that token on, while the request runs with the same weights (the tokens
 *       sampled in it, that token included, and their version);</li>
 *   <li>{@link Kind#PREEMPTED}: from an eviction to the next admission.</li>
 * </ul>
 *
 * <p>Recorded for every request (the sampler decides at the finish whether the span is kept): a few longs per
 * phase in one array. Owned by the thread that owns the {@link Sequence}. Instants are clamped so that no phase
 * starts before the previous one.
 */
final class RequestPhases {
  /** A stage of the request's lifecycle, and the name of its span. */
  enum Kind {
    QUEUED(SpanNames.LLM_REQUEST_QUEUED),
    PREFILL(SpanNames.LLM_REQUEST_PREFILL),
    DECODE(SpanNames.LLM_REQUEST_DECODE),
    PREEMPTED(SpanNames.LLM_REQUEST_PREEMPTED);

    private final String spanName;

    Kind(String spanName) {
      this.spanName = spanName;
    }

    String spanName() {
      return spanName;
    }
  }

  private static final Kind[] KINDS = Kind.values();
  // per phase: kind ordinal, start (epoch nanos), tokens (prefill: input, decode: output), weight version,
  // recompute (1 or 0)
  private static final int KIND = 0;
  private static final int START = 1;
  private static final int TOKENS = 2;
  private static final int VERSION = 3;
  private static final int RECOMPUTE = 4;
  private static final int FIELDS = 5;

  private long[] data = new long[3 * FIELDS];
  private int count;
  private boolean prefilled;

  /** A request that arrived (and was queued) at {@code arrival}. */
  RequestPhases(long arrival) {
    add(Kind.QUEUED, arrival, 0, GenerationResult.NO_VERSION, false);
  }

  /** Admitted, or its cache recomputed after a weight update, at {@code at}: a prefill over {@code inputTokens}. */
  void prefill(long at, int inputTokens, long version) {
    add(Kind.PREFILL, at, inputTokens, version, prefilled);
    prefilled = true;
  }

  /** Evicted from the running batch at {@code at}. */
  void preempted(long at) {
    add(Kind.PREEMPTED, at, 0, GenerationResult.NO_VERSION, false);
  }

  /** A token sampled at {@code at} with {@code version}: the first after a prefill begins a decode. */
  void tokenSampled(long at, long version) {
    if (count == 0 || data[(count - 1) * FIELDS + KIND] != Kind.DECODE.ordinal()) {
      add(Kind.DECODE, at, 0, version, false);
    }
    data[(count - 1) * FIELDS + TOKENS]++;
  }

  /** The number of phases (at least 1: queued). */
  int size() {
    return count;
  }

  Kind kind(int i) {
    return KINDS[(int) field(i, KIND)];
  }

  long start(int i) {
    return field(i, START);
  }

  /** Where phase {@code i} ends: the next one's start, or {@code finish} for the last (never before its start). */
  long end(int i, long finish) {
    return i + 1 < count ? start(i + 1) : Math.max(finish, start(i));
  }

  /** A prefill's input tokens, a decode's output tokens; 0 for the others. */
  long tokens(int i) {
    return field(i, TOKENS);
  }

  /** The weight version of a prefill or a decode. */
  long version(int i) {
    return field(i, VERSION);
  }

  /** Whether a prefill recomputes (it is not the request's first). */
  boolean recompute(int i) {
    return field(i, RECOMPUTE) != 0;
  }

  private long field(int i, int f) {
    if (i < 0 || i >= count) {
      throw new IndexOutOfBoundsException("phase " + i + " of " + count);
    }
    return data[i * FIELDS + f];
  }

  private void add(Kind kind, long at, long tokens, long version, boolean recompute) {
    if ((count + 1) * FIELDS > data.length) {
      data = Arrays.copyOf(data, data.length * 2);
    }
    long start = count == 0 ? at : Math.max(at, data[(count - 1) * FIELDS + START]);
    int o = count * FIELDS;
    data[o + KIND] = kind.ordinal();
    data[o + START] = start;
    data[o + TOKENS] = tokens;
    data[o + VERSION] = version;
    data[o + RECOMPUTE] = recompute ? 1 : 0;
    count++;
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("RequestPhases[");
    for (int i = 0; i < count; i++) {
      sb.append(i == 0 ? "" : ", ").append(kind(i).spanName()).append('@').append(start(i));
    }
    return sb.append(']').toString();
  }
}
