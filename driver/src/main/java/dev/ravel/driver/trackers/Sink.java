package dev.ravel.driver.trackers;

import dev.ravel.telemetry.runs.StepRecord;
import java.util.List;

/**
 * One tracker, called from its own thread only ({@link SinkWorker}): any exception it throws is a failure of the
 * tracker, counted, never the run's. Each call is bounded in time by the sink itself.
 */
interface Sink {
  /** {@return the tracker's name in a run config and in {@code run.json}: {@code mlflow}, {@code tensorboard}} */
  String name();

  /** Gets ready for the first steps (creates the tracker's run, starts a writer); tried again before each batch until it succeeds. */
  void start() throws Exception;

  /** Delivers {@code steps}, in order; either all of them or, by throwing, none. */
  void send(List<StepRecord> steps) throws Exception;

  /** Ends the tracker's run with the Ravel run's {@code status} ({@code succeeded}, {@code failed}, {@code interrupted}). */
  void finish(String status) throws Exception;

  /** Frees what the sink holds (a writer process); must return promptly, also after an interrupt. */
  void close();

  /** What {@code run.json} shows of this tracker beyond its counts (the MLflow run's id, the event folder). */
  default java.util.Map<String, Object> details() {
    return java.util.Map.of();
  }
}
