package dev.ravel.telemetry.config;

import java.util.Locale;

/** Where a process's spans go. */
public enum ExporterKind {
  /** OTLP JSON Lines files under {@code runs/<run-id>/} (the embedded default). */
  FILE(true, false),
  /** An OTLP backend, configured by the standard {@code OTEL_EXPORTER_OTLP_*} settings. */
  OTLP(false, true),
  /** Both of the above. */
  BOTH(true, true),
  /** Nowhere (spans are still counted). */
  NONE(false, false);

  private final boolean file;
  private final boolean otlp;

  ExporterKind(boolean file, boolean otlp) {
    this.file = file;
    this.otlp = otlp;
  }

  public boolean writesFiles() {
    return file;
  }

  public boolean usesOtlp() {
    return otlp;
  }

  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  public static ExporterKind parse(String key, String value) {
    for (ExporterKind k : values()) {
      if (k.configName().equals(value.trim().toLowerCase(Locale.ROOT))) {
        return k;
      }
    }
    throw new ConfigException(key, "unknown exporter '" + value + "' (valid: " + Names.of(values()) + ")");
  }
}
