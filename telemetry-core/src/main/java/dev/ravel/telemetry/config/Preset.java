package dev.ravel.telemetry.config;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/** A named set of span groups, the starting point that explicit {@code span_groups} add to. */
public enum Preset {
  /** No spans at all. */
  NONE(EnumSet.noneOf(SpanGroup.class)),
  /** The step, generation and worker spans: enough to see where a step's time goes. */
  DEFAULT(EnumSet.of(SpanGroup.STEP, SpanGroup.GENERATION, SpanGroup.WORKER, SpanGroup.JOB)),
  /** Every phase of every step, worker spans and idle time; engine spans stay off. */
  PER_STEP(EnumSet.complementOf(EnumSet.of(SpanGroup.ENGINE))),
  /** Everything, including the engine's per-request spans. */
  ALL(EnumSet.allOf(SpanGroup.class));

  private final Set<SpanGroup> groups;

  Preset(Set<SpanGroup> groups) {
    this.groups = groups;
  }

  /** The groups this preset turns on (a copy). */
  public Set<SpanGroup> groups() {
    return groups.isEmpty() ? EnumSet.noneOf(SpanGroup.class) : EnumSet.copyOf(groups);
  }

  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  public static Preset parse(String key, String value) {
    for (Preset p : values()) {
      if (p.configName().equals(value.trim().toLowerCase(Locale.ROOT))) {
        return p;
      }
    }
    throw new ConfigException(key, "unknown preset '" + value + "' (valid: " + Names.of(values()) + ")");
  }
}
