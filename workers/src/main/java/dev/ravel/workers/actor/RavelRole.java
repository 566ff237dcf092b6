package dev.ravel.workers.actor;

import dev.ravel.telemetry.sdk.ExportStats;

/** What every Ravel actor role offers besides its own methods: its process's telemetry counts and flush. */
public interface RavelRole {
  /** Counts of the actor process's spans (ended, exported, failed, dropped). */
  ExportStats telemetryStats();

  /** Exports the actor process's queued spans, waiting at most {@code timeoutMs}; returns the counts after. */
  ExportStats flushTelemetry(long timeoutMs);
}
