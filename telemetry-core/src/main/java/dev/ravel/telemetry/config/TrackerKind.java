package dev.ravel.telemetry.config;

import java.util.Locale;

/**
 * An experiment tracker a run's step metrics also go to ({@code telemetry.trackers}), beside the run folder's
 * {@code steps.jsonl} and the OpenTelemetry metrics.
 */
public enum TrackerKind {
  /** An MLflow tracking server, at {@code MLFLOW_TRACKING_URI}: one MLflow run per Ravel run. */
  MLFLOW,
  /** TensorBoard event files under {@code runs/<run-id>/tensorboard/}. */
  TENSORBOARD;

  /** {@return the name in a run config: {@code mlflow} or {@code tensorboard}} */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The tracker named {@code value}.
   *
   * @param key the key or variable the value came from, for the error
   * @param value the name, any case, surrounding blanks ignored
   * @return the tracker
   * @throws ConfigException naming {@code key} and the value when no tracker has that name
   */
  public static TrackerKind parse(String key, String value) {
    for (TrackerKind k : values()) {
      if (k.configName().equals(value.trim().toLowerCase(Locale.ROOT))) {
        return k;
      }
    }
    throw new ConfigException(key, "unknown tracker '" + value + "' (valid: " + Names.of(values()) + ")");
  }
}
