package dev.ravel.workers.actor;

import dev.ravel.telemetry.sdk.ExportStats;

/** What every Ravel actor role offers besides its own methods: its process's telemetry counts and flush, and its id. */
public interface RavelRole {
  /** {@return counts of the actor process's spans (ended, exported, failed, dropped)} */
  ExportStats telemetryStats();

  /**
   * Exports the actor process's queued spans, waiting at most {@code timeoutMs}.
   *
   * @param timeoutMs the longest wait for the export, in milliseconds
   * @return the counts of the actor process's spans after the flush
   */
  ExportStats flushTelemetry(long timeoutMs);

  /**
   * The process id of the actor's worker process. A restarted actor answers with its new process's id, which
   * is how a caller tells a restart (the new process needs the current weights) from a call that failed for
   * another reason.
   *
   * @return the process id of the actor's current worker process
   */
  @Untraced
  long processId();
}
