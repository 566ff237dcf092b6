package dev.ravel.telemetry.sdk;

import java.io.Serializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Counts of one process's spans (or of several processes', {@link #plus}): how many ended (sampled), and for
 * each exporter ({@code file}, {@code otlp}: each has its own export queue, so a slow backend holds back no
 * other) how many it exported, how many failed to export, and how many it dropped (its queue was full, or
 * still held them when the process's telemetry had to stop). Once nothing is pending, for each exporter
 * {@code ended = exported + failed + dropped}. Immutable.
 */
public final class ExportStats implements Serializable {
  private static final long serialVersionUID = 2L;
  /** The name of the counts of a process that does not tell its exporters apart (a Python worker). */
  public static final String ALL_EXPORTERS = "all";

  /** No spans, no exporter: what {@link #plus} leaves unchanged. */
  public static final ExportStats NONE = new ExportStats(0, Map.of());

  /** Spans that ended (sampled). */
  private final long ended;
  /** Each exporter's counts, by name, in the order the exporters were set up; unmodifiable. */
  private final Map<String, Sent> exporters;

  /**
   * What one exporter did with the spans that ended.
   *
   * @param exported spans the exporter exported
   * @param failed spans the exporter failed to export
   * @param dropped spans the exporter dropped (its queue was full, or still held them at stop)
   * @serial exclude
   */
  public record Sent(long exported, long failed, long dropped) implements Serializable {
    /**
     * {@return both counts together, count by count}
     *
     * @param other the counts to add
     */
    public Sent plus(Sent other) {
      return new Sent(exported + other.exported, failed + other.failed, dropped + other.dropped);
    }
  }

  /**
   * Counts of a process with one exporter (or that does not tell its exporters apart), under
   * {@link #ALL_EXPORTERS}.
   *
   * @param ended spans that ended
   * @param exported spans exported
   * @param failed spans that failed to export
   * @param dropped spans dropped
   */
  public ExportStats(long ended, long exported, long failed, long dropped) {
    this(ended, Map.of(ALL_EXPORTERS, new Sent(exported, failed, dropped)));
  }

  /**
   * Counts of a process with an entry per exporter, in the order they were set up.
   *
   * @param ended spans that ended
   * @param exporters each exporter's counts, by name (copied), not {@code null}; empty when spans go nowhere
   */
  public ExportStats(long ended, Map<String, Sent> exporters) {
    this.ended = ended;
    this.exporters = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(exporters, "exporters")));
  }

  /** {@return the number of spans that ended (sampled)} */
  public long ended() {
    return ended;
  }

  /**
   * {@return the spans exported by the first exporter (the file, when the run writes files), 0 with no exporter;
   * see {@link #exporters()}}
   */
  public long exported() {
    return first().exported();
  }

  /** {@return the spans the first exporter failed to export, 0 with no exporter; see {@link #exporters()}} */
  public long failed() {
    return first().failed();
  }

  /** {@return the spans the first exporter dropped, 0 with no exporter; see {@link #exporters()}} */
  public long dropped() {
    return first().dropped();
  }

  private Sent first() {
    return exporters.values().stream().findFirst().orElse(new Sent(0, 0, 0));
  }

  /**
   * {@return each exporter's counts, by name ({@code file}, {@code otlp}), unmodifiable; empty when spans go
   * nowhere}
   */
  public Map<String, Sent> exporters() {
    return exporters;
  }

  /** {@return the most spans any exporter has still to export, fail or drop (queued, or in flight); 0 for none} */
  public long pending() {
    return exporters.values().stream().mapToLong(this::pending).max().orElse(0);
  }

  private long pending(Sent s) {
    return Math.max(0, ended - s.exported() - s.failed() - s.dropped());
  }

  /**
   * These counts once the process's telemetry stopped: what each exporter still held can no longer be sent
   * and is counted as dropped, so that for each exporter {@code ended = exported + failed + dropped}.
   *
   * @return the counts with every pending span counted as dropped
   */
  public ExportStats closed() {
    Map<String, Sent> m = new LinkedHashMap<>();
    exporters.forEach((k, v) -> m.put(k, new Sent(v.exported(), v.failed(), v.dropped() + pending(v))));
    return new ExportStats(ended, m);
  }

  /**
   * Both counts together, exporter by exporter (the processes of a run).
   *
   * @param other the counts to add
   * @return the summed counts, with the exporters of both
   */
  public ExportStats plus(ExportStats other) {
    Map<String, Sent> sum = new LinkedHashMap<>(exporters);
    other.exporters.forEach((k, v) -> sum.merge(k, v, Sent::plus));
    return new ExportStats(ended + other.ended, sum);
  }

  /** {@return whether, for each exporter, {@code ended = exported + failed + dropped}} */
  public boolean addsUp() {
    return exporters.values().stream().allMatch(s -> pending(s) == 0 && s.exported() + s.failed() + s.dropped() == ended);
  }

  /** {@return the counts as run.json has them: ended, and each exporter's exported, failed and dropped} */
  public Map<String, Object> json() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("ended", ended);
    Map<String, Object> ex = new LinkedHashMap<>();
    exporters.forEach((k, v) -> {
      Map<String, Object> e = new LinkedHashMap<>();
      e.put("exported", v.exported());
      e.put("failed", v.failed());
      e.put("dropped", v.dropped());
      ex.put(k, e);
    });
    m.put("exporters", ex);
    return m;
  }

  /**
   * Counts as {@link #json()} wrote them (read back from a file another process wrote).
   *
   * @param json the map {@link #json()} made, as read back from JSON
   * @return the counts
   * @throws IllegalArgumentException naming the field that is missing or not a whole number
   */
  public static ExportStats fromJson(Map<String, ?> json) {
    long ended = count(json, "ended", "");
    Object ex = json.get("exporters");
    if (!(ex instanceof Map<?, ?> per)) {
      throw new IllegalArgumentException("exporters: expected an object of counts per exporter, got " + ex);
    }
    Map<String, Sent> sent = new LinkedHashMap<>();
    for (Map.Entry<?, ?> e : per.entrySet()) {
      if (!(e.getValue() instanceof Map<?, ?> c)) {
        throw new IllegalArgumentException("exporters." + e.getKey() + ": expected an object, got " + e.getValue());
      }
      String at = "exporters." + e.getKey() + ".";
      sent.put(String.valueOf(e.getKey()), new Sent(count(c, "exported", at), count(c, "failed", at),
          count(c, "dropped", at)));
    }
    return new ExportStats(ended, sent);
  }

  private static long count(Map<?, ?> m, String key, String at) {
    Object v = m.get(key);
    if (v instanceof Number n && n.doubleValue() == n.longValue() && n.longValue() >= 0) {
      return n.longValue();
    }
    throw new IllegalArgumentException(at + key + ": expected a count (a whole number, at least 0), got " + v);
  }

  /**
   * {@return the counts in words: {@code 120 ended = 100 exported + 0 failed + 20 dropped (file)}, one clause per
   * exporter}
   */
  public String summary() {
    StringBuilder sb = new StringBuilder();
    exporters.forEach((k, v) -> {
      if (sb.length() > 0) {
        sb.append("; ");
      }
      sb.append(ended).append(" ended = ").append(v.exported()).append(" exported + ").append(v.failed())
          .append(" failed + ").append(v.dropped()).append(" dropped (").append(k).append(')');
    });
    return sb.length() == 0 ? ended + " ended, exported nowhere" : sb.toString();
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("spans ended=" + ended);
    exporters.forEach((k, v) -> sb.append(' ').append(k).append("{exported=").append(v.exported())
        .append(" failed=").append(v.failed()).append(" dropped=").append(v.dropped()).append('}'));
    return sb.toString();
  }
}
