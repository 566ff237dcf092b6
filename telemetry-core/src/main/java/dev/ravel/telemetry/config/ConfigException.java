package dev.ravel.telemetry.config;

/**
 * A configuration value that Ravel cannot use. The message always names the offending key (for example
 * {@code telemetry.preset} or {@code OTEL_EXPORTER_OTLP_TRACES_PROTOCOL}); {@link #key()} returns it.
 * Secret values are never included in the message.
 */
public final class ConfigException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final String key;
  private final String problem;

  public ConfigException(String key, String problem) {
    super(key + ": " + problem);
    this.key = key;
    this.problem = problem;
  }

  /** What is wrong with the value, without the key. */
  public String problem() {
    return problem;
  }

  /**
   * The same problem under {@code prefix + key()}: how a section of settings that names its own fields
   * ({@code servers}) reports them as the config keys a user wrote ({@code generation.servers}).
   */
  public ConfigException under(String prefix) {
    return new ConfigException(prefix + key, problem);
  }

  /** The configuration key or environment variable whose value was rejected. */
  public String key() {
    return key;
  }
}
