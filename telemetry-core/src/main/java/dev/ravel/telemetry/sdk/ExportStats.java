package dev.ravel.telemetry.sdk;

/**
 * Counts of one process's spans: ended (sampled), exported, failed to export, and dropped because the
 * export queue was full. Immutable snapshot.
 */
public final class ExportStats implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private final long ended;
  private final long exported;
  private final long failed;
  private final long dropped;

  public ExportStats(long ended, long exported, long failed, long dropped) {
    this.ended = ended;
    this.exported = exported;
    this.failed = failed;
    this.dropped = dropped;
  }

  public long ended() {
    return ended;
  }

  public long exported() {
    return exported;
  }

  public long failed() {
    return failed;
  }

  public long dropped() {
    return dropped;
  }

  /** Spans ended but neither exported, failed nor dropped yet (queued or in flight). */
  public long pending() {
    return Math.max(0, ended - exported - failed - dropped);
  }

  @Override
  public String toString() {
    return "spans ended=" + ended + " exported=" + exported + " failed=" + failed + " dropped=" + dropped;
  }
}
