package dev.ravel.telemetry.config;

/**
 * A configuration value that Ravel cannot use. The message always names the offending key (for example
 * {@code telemetry.preset} or {@code OTEL_EXPORTER_OTLP_TRACES_PROTOCOL}); {@link #key()} returns it.
 * Secret values are never included in the message.
 */
public final class ConfigException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final String key;

  public ConfigException(String key, String problem) {
    super(key + ": " + problem);
    this.key = key;
  }

  /** The configuration key or environment variable whose value was rejected. */
  public String key() {
    return key;
  }
}
