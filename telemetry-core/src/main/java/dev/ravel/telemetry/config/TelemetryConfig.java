package dev.ravel.telemetry.config;

import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The {@code telemetry:} section of a run config: which spans are made, where they go and under which run
 * id. Immutable; build one with {@link #builder()} or read one with {@link #fromMap(Map, Map)}, which
 * applies {@code RAVEL_TELEMETRY_*} environment overrides. Every invalid value is rejected in
 * {@link Builder#build()} with a {@link ConfigException} that names the key.
 */
public final class TelemetryConfig {
  /** Where run folders go when neither {@code telemetry.runs_dir} nor {@code RAVEL_TELEMETRY_RUNS_DIR} says. */
  public static final String DEFAULT_RUNS_DIR = "runs";
  /** The environment variable of {@code telemetry.runs_dir}. */
  public static final String RUNS_DIR_ENV = "RAVEL_TELEMETRY_RUNS_DIR";

  /** Prefix of the environment variables that override the YAML section (and carry it to workers). */
  public static final String ENV_PREFIX = "RAVEL_TELEMETRY_";

  /** The YAML keys of the section, in the order they are documented. */
  public static final List<String> KEYS = List.of(
      "enabled", "preset", "span_groups", "engine_tracing", "engine_sample_ratio",
      "engine_slow_request_ms", "exporter", "run_id", "service_name", "resource_attributes", "runs_dir",
      "env_passthrough", "shutdown_timeout_ms", "samples_per_step", "trackers");

  /** The OpenTelemetry variable that names the service when {@code telemetry.service_name} is not set. */
  public static final String OTEL_SERVICE_NAME = "OTEL_SERVICE_NAME";
  /** The OpenTelemetry variable whose {@code key=value} pairs join every process's resource. */
  public static final String OTEL_RESOURCE_ATTRIBUTES = "OTEL_RESOURCE_ATTRIBUTES";
  /** The OpenTelemetry variable that turns the SDK off: {@code true} disables Ravel's telemetry. */
  public static final String OTEL_SDK_DISABLED = "OTEL_SDK_DISABLED";
  /**
   * The OpenTelemetry variable that picks the span exporter: {@code none} exports no telemetry; {@code otlp} keeps
   * the config's.
   */
  public static final String OTEL_TRACES_EXPORTER = "OTEL_TRACES_EXPORTER";

  private static final Pattern RUN_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private final boolean enabled;
  private final Preset preset;
  private final Set<SpanGroup> extraGroups;
  private final boolean engineTracing;
  private final double engineSampleRatio;
  private final Duration engineSlowRequest;
  private final ExporterKind exporter;
  private final String runId;
  private final String serviceName;
  private final Map<String, String> resourceAttributes;
  private final Path runsDir;
  private final List<String> envPassthrough;
  private final Duration shutdownTimeout;
  private final int samplesPerStep;
  private final Set<TrackerKind> trackers;
  private final Set<SpanGroup> groups;

  private TelemetryConfig(Builder b, boolean engineTracing) {
    this.enabled = b.enabled;
    this.preset = b.preset;
    this.extraGroups = Collections.unmodifiableSet(copy(b.extraGroups));
    this.engineTracing = engineTracing;
    this.engineSampleRatio = b.engineSampleRatio;
    this.engineSlowRequest = b.engineSlowRequest;
    this.exporter = b.exporter;
    this.runId = b.runId;
    this.serviceName = b.serviceName;
    this.resourceAttributes = Collections.unmodifiableMap(new LinkedHashMap<>(b.resourceAttributes));
    this.runsDir = b.runsDir.toAbsolutePath().normalize();
    this.envPassthrough = List.copyOf(b.envPassthrough);
    this.shutdownTimeout = b.shutdownTimeout;
    this.samplesPerStep = b.samplesPerStep;
    this.trackers = Collections.unmodifiableSet(b.trackers.isEmpty() ? EnumSet.noneOf(TrackerKind.class)
        : EnumSet.copyOf(b.trackers));
    EnumSet<SpanGroup> g = copy(preset.groups());
    g.addAll(extraGroups);
    if (engineTracing) {
      g.add(SpanGroup.ENGINE);
    } else {
      g.remove(SpanGroup.ENGINE);
    }
    this.groups = enabled ? Collections.unmodifiableSet(g) : Collections.emptySet();
  }

  private static EnumSet<SpanGroup> copy(Collection<SpanGroup> c) {
    return c.isEmpty() ? EnumSet.noneOf(SpanGroup.class) : EnumSet.copyOf(c);
  }

  /** {@return a new builder holding the default values} */
  public static Builder builder() {
    return new Builder();
  }

  /** {@return a new builder holding this config's values, to derive a changed copy} */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.enabled = enabled;
    b.preset = preset;
    b.extraGroups = copy(extraGroups);
    b.engineTracing = engineTracing;
    b.engineSampleRatio = engineSampleRatio;
    b.engineSlowRequest = engineSlowRequest;
    b.exporter = exporter;
    b.runId = runId;
    b.serviceName = serviceName;
    b.resourceAttributes = new LinkedHashMap<>(resourceAttributes);
    b.runsDir = runsDir;
    b.envPassthrough = new ArrayList<>(envPassthrough);
    b.shutdownTimeout = shutdownTimeout;
    b.samplesPerStep = samplesPerStep;
    b.trackers = new ArrayList<>(trackers);
    return b;
  }

  /**
   * Reads the {@code telemetry:} section of a run config (YAML already parsed into maps, lists and
   * scalars), then applies {@code RAVEL_TELEMETRY_<KEY>} overrides from {@code env}. An empty
   * environment value counts as unset. Unknown keys and invalid values fail with the key named.
   *
   * <p>The standard OpenTelemetry variables are honoured beneath Ravel's own: with no
   * {@code service_name} set, {@code OTEL_SERVICE_NAME} names the service, else a {@code service.name} in
   * {@code OTEL_RESOURCE_ATTRIBUTES}; the other pairs of {@code OTEL_RESOURCE_ATTRIBUTES} join the resource,
   * below any {@code resource_attributes} of the same key.
   *
   * @param section the {@code telemetry:} section; {@code null} when the run config has none
   * @param env the environment variables to read overrides from, e.g. {@link System#getenv()}
   * @return the validated config
   * @throws ConfigException naming the key, or the variable, of an unknown key or invalid value
   */
  public static TelemetryConfig fromMap(Map<String, ?> section, Map<String, String> env) {
    Map<String, Object> values = new LinkedHashMap<>();
    Map<String, String> origin = new LinkedHashMap<>();
    if (section != null) {
      for (Map.Entry<String, ?> e : section.entrySet()) {
        if (!KEYS.contains(e.getKey())) {
          throw new ConfigException("telemetry." + e.getKey(), "unknown key (valid: " + String.join(", ", KEYS) + ")");
        }
        values.put(e.getKey(), e.getValue());
        origin.put(e.getKey(), "telemetry." + e.getKey());
      }
    }
    for (String key : KEYS) {
      String envKey = ENV_PREFIX + key.toUpperCase(Locale.ROOT);
      String v = env.get(envKey);
      if (v != null && !v.isEmpty()) {
        values.put(key, v);
        origin.put(key, envKey);
      }
    }
    Builder b = builder();
    String otelAttributes = env.get(OTEL_RESOURCE_ATTRIBUTES);
    Map<String, String> fromOtel = otelAttributes == null || otelAttributes.isEmpty()
        ? new LinkedHashMap<>() : Values.pairs(OTEL_RESOURCE_ATTRIBUTES, otelAttributes);
    String otelService = fromOtel.remove("service.name");
    String otelServiceName = env.get(OTEL_SERVICE_NAME);
    if (otelServiceName != null && !otelServiceName.isEmpty()) {
      otelService = otelServiceName;
      b.origin("service_name", OTEL_SERVICE_NAME);
    } else if (otelService != null) {
      b.origin("service_name", OTEL_RESOURCE_ATTRIBUTES);
    }
    if (otelService != null) {
      b.serviceName(otelService);
    }
    if (!fromOtel.isEmpty()) {
      b.resourceAttributes(fromOtel);
      b.origin("resource_attributes", OTEL_RESOURCE_ATTRIBUTES);
    }
    for (Map.Entry<String, Object> e : values.entrySet()) {
      if (e.getKey().equals("resource_attributes") && !fromOtel.isEmpty()) {
        Map<String, String> merged = new LinkedHashMap<>(fromOtel);
        merged.putAll(attributes(origin.get("resource_attributes"), e.getValue()));
        b.resourceAttributes(merged);
        b.origin("resource_attributes", origin.get("resource_attributes"));
        continue;
      }
      apply(b, e.getKey(), origin.get(e.getKey()), e.getValue());
    }
    applyOtelSwitches(b, env);
    return b.build();
  }

  /**
   * {@code OTEL_SDK_DISABLED=true} and {@code OTEL_TRACES_EXPORTER=none}, as the OpenTelemetry specification
   * defines them, over whatever the config says; values the specification does not define are errors naming
   * the variable (empty counts as unset: that is how a worker sees them masked).
   */
  private static void applyOtelSwitches(Builder b, Map<String, String> env) {
    String disabled = env.get(OTEL_SDK_DISABLED);
    if (disabled != null && !disabled.isBlank()) {
      String d = disabled.trim().toLowerCase(Locale.ROOT);
      if (!d.equals("true") && !d.equals("false")) {
        throw new ConfigException(OTEL_SDK_DISABLED, "must be true or false, got '" + disabled + "'");
      }
      if (d.equals("true")) {
        b.enabled(false);
        b.origin("enabled", OTEL_SDK_DISABLED);
      }
    }
    String traces = env.get(OTEL_TRACES_EXPORTER);
    if (traces != null && !traces.isBlank()) {
      String t = traces.trim().toLowerCase(Locale.ROOT);
      switch (t) {
        case "none" -> {
          b.exporter(ExporterKind.NONE);
          b.origin("exporter", OTEL_TRACES_EXPORTER);
        }
        case "otlp" -> { } // the config's exporter (file, otlp or both) stands
        default -> throw new ConfigException(OTEL_TRACES_EXPORTER, "unsupported value '" + traces
            + "' (valid: otlp, none; Ravel's own file export is telemetry.exporter)");
      }
    }
  }

  private static void apply(Builder b, String key, String where, Object value) {
    if (value == null) {
      return;
    }
    switch (key) {
      case "enabled" -> b.enabled(Values.bool(where, value));
      case "preset" -> b.preset(Preset.parse(where, Values.string(where, value)));
      case "span_groups" -> b.spanGroups(Values.list(where, value).stream()
          .map(s -> SpanGroup.parse(where, s)).collect(Collectors.toList()));
      case "engine_tracing" -> b.engineTracing(Values.bool(where, value));
      case "engine_sample_ratio" -> b.engineSampleRatio(Values.number(where, value));
      case "engine_slow_request_ms" -> b.engineSlowRequest(Duration.ofMillis(Values.longValue(where, value)));
      case "exporter" -> b.exporter(ExporterKind.parse(where, Values.string(where, value)));
      case "run_id" -> b.runId(Values.string(where, value));
      case "service_name" -> b.serviceName(Values.string(where, value));
      case "resource_attributes" -> b.resourceAttributes(attributes(where, value));
      case "runs_dir" -> b.runsDir(Path.of(Values.string(where, value)));
      case "env_passthrough" -> b.envPassthrough(Values.list(where, value));
      case "shutdown_timeout_ms" -> b.shutdownTimeout(Duration.ofMillis(Values.longValue(where, value)));
      case "samples_per_step" -> b.samplesPerStep(Math.toIntExact(Values.longValue(where, value)));
      case "trackers" -> b.trackers(Values.list(where, value).stream().map(s -> TrackerKind.parse(where, s)).toList());
      default -> throw new ConfigException(where, "unknown key");
    }
    b.origin(key, where);
  }

  /**
   * This config as {@code RAVEL_TELEMETRY_*} variables: how it travels, explicitly, into every worker's
   * environment. {@link #fromMap(Map, Map)} with an empty section reads it back.
   *
   * @return the variables, by name, in the order of {@link #KEYS}
   */
  public Map<String, String> toEnvironment() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put(ENV_PREFIX + "ENABLED", Boolean.toString(enabled));
    env.put(ENV_PREFIX + "PRESET", preset.configName());
    env.put(ENV_PREFIX + "SPAN_GROUPS", extraGroups.stream().map(SpanGroup::configName).collect(Collectors.joining(",")));
    env.put(ENV_PREFIX + "ENGINE_TRACING", Boolean.toString(engineTracing));
    env.put(ENV_PREFIX + "ENGINE_SAMPLE_RATIO", Double.toString(engineSampleRatio));
    env.put(ENV_PREFIX + "ENGINE_SLOW_REQUEST_MS", Long.toString(engineSlowRequest.toMillis()));
    env.put(ENV_PREFIX + "EXPORTER", exporter.configName());
    env.put(ENV_PREFIX + "RUN_ID", runId);
    env.put(ENV_PREFIX + "SERVICE_NAME", serviceName);
    env.put(ENV_PREFIX + "RESOURCE_ATTRIBUTES", encodeAttributes(resourceAttributes));
    env.put(ENV_PREFIX + "RUNS_DIR", runsDir.toString());
    env.put(ENV_PREFIX + "ENV_PASSTHROUGH", String.join(",", envPassthrough));
    env.put(ENV_PREFIX + "SHUTDOWN_TIMEOUT_MS", Long.toString(shutdownTimeout.toMillis()));
    env.put(ENV_PREFIX + "SAMPLES_PER_STEP", Integer.toString(samplesPerStep));
    env.put(ENV_PREFIX + "TRACKERS", trackers.stream().map(TrackerKind::configName).collect(Collectors.joining(",")));
    return env;
  }

  /** {@return whether telemetry is on at all} */
  public boolean enabled() {
    return enabled;
  }

  /** {@return the preset the span groups start from} */
  public Preset preset() {
    return preset;
  }

  /**
   * The groups that are on: the preset's, plus the explicit ones, with ENGINE following engine tracing.
   *
   * @return the groups that are on, unmodifiable; empty when telemetry is off
   */
  public Set<SpanGroup> groups() {
    return groups;
  }

  /**
   * {@return whether spans of {@code group} are made}
   *
   * @param group the span group
   */
  public boolean isOn(SpanGroup group) {
    return groups.contains(group);
  }

  /**
   * {@return whether the inference engine emits its per-request spans (and may see trace-enabling OTEL_* vars);
   * false when telemetry is off}
   */
  public boolean engineTracing() {
    return enabled && engineTracing;
  }

  /**
   * {@return the share of engine requests whose span is kept, 0.0 to 1.0 (errored, preempted and slow requests
   * are always kept)}
   */
  public double engineSampleRatio() {
    return engineSampleRatio;
  }

  /**
   * Engine requests slower than this end to end are always kept by the engine sampler.
   *
   * @return the slow-request threshold, not negative
   */
  public Duration engineSlowRequest() {
    return engineSlowRequest;
  }

  /** {@return where the spans go; {@link ExporterKind#NONE} when telemetry is off} */
  public ExporterKind exporter() {
    return enabled ? exporter : ExporterKind.NONE;
  }

  /** {@return the run's id, which names its folder under {@link #runsDir()}} */
  public String runId() {
    return runId;
  }

  /** {@return the OpenTelemetry service name ({@code service.name}) of the run's processes} */
  public String serviceName() {
    return serviceName;
  }

  /**
   * Resource attributes every process of the run adds (from {@code telemetry.resource_attributes} and
   * {@code OTEL_RESOURCE_ATTRIBUTES}); Ravel's own ({@code service.name}, {@code rl.*}) are not among them.
   *
   * @return the attributes by key, unmodifiable
   */
  public Map<String, String> resourceAttributes() {
    return resourceAttributes;
  }

  /** {@return the folder that holds one folder per run ({@code runs/}), absolute and normalized} */
  public Path runsDir() {
    return runsDir;
  }

  /** {@return the folder of this run's JSONL files: {@code runs/<run-id>/}} */
  public Path runDir() {
    return runsDir.resolve(runId);
  }

  /** {@return the names of the driver environment variables passed unchanged to every worker} */
  public List<String> envPassthrough() {
    return envPassthrough;
  }

  /** {@return the upper bound on the flush at process shutdown} */
  public Duration shutdownTimeout() {
    return shutdownTimeout;
  }

  /** {@return the number of completions a GRPO step keeps in the run folder's {@code samples.jsonl} (0: none)} */
  public int samplesPerStep() {
    return samplesPerStep;
  }

  /**
   * The experiment trackers the run's step metrics also go to ({@code telemetry.trackers}; default none): each
   * step's numbers as they end, beside {@code steps.jsonl}. A tracker that fails never fails a step.
   *
   * @return the trackers, unmodifiable, in declaration order of {@link TrackerKind}
   */
  public Set<TrackerKind> trackers() {
    return trackers;
  }

  @Override
  public String toString() {
    return "TelemetryConfig{enabled=" + enabled + ", preset=" + preset.configName() + ", groups=" + groups
        + ", engineTracing=" + engineTracing + ", engineSampleRatio=" + engineSampleRatio + ", exporter="
        + exporter.configName() + ", runId=" + runId + ", serviceName=" + serviceName + ", resourceAttributes=" + resourceAttributes
        + ", runsDir=" + runsDir
        + ", envPassthrough=" + envPassthrough + ", trackers=" + trackers + "}";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TelemetryConfig c && toEnvironment().equals(c.toEnvironment());
  }

  @Override
  public int hashCode() {
    return toEnvironment().hashCode();
  }

  /** A YAML map of attributes, or {@code key=value} pairs separated by commas (values %-encoded). */
  private static Map<String, String> attributes(String where, Object value) {
    if (value instanceof Map<?, ?> m) {
      Map<String, String> out = new LinkedHashMap<>();
      for (Map.Entry<?, ?> e : m.entrySet()) {
        Object v = e.getValue();
        if (v instanceof Map || v instanceof Collection || v == null) {
          throw new ConfigException(where + "." + e.getKey(), "must be a string, number or boolean");
        }
        out.put(String.valueOf(e.getKey()), String.valueOf(v));
      }
      return out;
    }
    return Values.pairs(where, Values.string(where, value));
  }

  private static String encodeAttributes(Map<String, String> attributes) {
    return attributes.entrySet().stream()
        .map(e -> e.getKey() + "=" + java.net.URLEncoder.encode(e.getValue(), java.nio.charset.StandardCharsets.UTF_8)
            .replace("+", "%20"))
        .collect(Collectors.joining(","));
  }

  /**
   * {@return a new run id: {@code yyyyMMdd-HHmmss-xxxx} (local time, then four random hex digits), sortable by start
   * time}
   */
  public static String newRunId() {
    return LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))
        + "-" + String.format("%04x", ThreadLocalRandom.current().nextInt(0x10000));
  }

  /** Builds a {@link TelemetryConfig}; {@link #build()} validates every value. */
  public static final class Builder {
    private boolean enabled = true;
    private Preset preset = Preset.PER_STEP;
    private EnumSet<SpanGroup> extraGroups = EnumSet.noneOf(SpanGroup.class);
    private Boolean engineTracing;
    private double engineSampleRatio = 1.0;
    private Duration engineSlowRequest = Duration.ofSeconds(2);
    private ExporterKind exporter = ExporterKind.FILE;
    private String runId;
    private String serviceName = "ravel";
    private Map<String, String> resourceAttributes = new LinkedHashMap<>();
    private Path runsDir = Path.of(DEFAULT_RUNS_DIR);
    private List<String> envPassthrough = new ArrayList<>();
    private Duration shutdownTimeout = Duration.ofSeconds(5);
    private int samplesPerStep = 4;
    private List<TrackerKind> trackers = new ArrayList<>();
    private final Map<String, String> origin = new LinkedHashMap<>();

    private Builder() {}

    void origin(String key, String where) {
      origin.put(key, where);
    }

    private String key(String key) {
      return origin.getOrDefault(key, "telemetry." + key);
    }

    /**
     * Turns telemetry on or off ({@code telemetry.enabled}; default on). Off, no span is made and none exported.
     *
     * @param enabled whether telemetry is on
     * @return this builder
     */
    public Builder enabled(boolean enabled) {
      this.enabled = enabled;
      return this;
    }

    /**
     * Sets the preset the span groups start from ({@code telemetry.preset}; default {@link Preset#PER_STEP}).
     *
     * @param preset the preset, not {@code null}
     * @return this builder
     */
    public Builder preset(Preset preset) {
      this.preset = Objects.requireNonNull(preset, "preset");
      return this;
    }

    /**
     * Groups turned on in addition to the preset's ({@code telemetry.span_groups}; default none).
     *
     * @param groups the extra groups, not {@code null}; they replace any set before
     * @return this builder
     */
    public Builder spanGroups(Collection<SpanGroup> groups) {
      this.extraGroups = copy(groups);
      return this;
    }

    /**
     * Engine spans on or off; unset, it follows the preset ({@code all} turns it on) and the groups.
     *
     * @param on whether the engine emits its per-request spans
     * @return this builder
     */
    public Builder engineTracing(boolean on) {
      this.engineTracing = on;
      return this;
    }

    /**
     * Sets the share of engine requests whose span is kept ({@code telemetry.engine_sample_ratio}; default 1.0).
     *
     * @param ratio the share, from 0.0 to 1.0 (checked by {@link #build()})
     * @return this builder
     */
    public Builder engineSampleRatio(double ratio) {
      this.engineSampleRatio = ratio;
      return this;
    }

    /**
     * Sets the duration above which an engine request's span is always kept
     * ({@code telemetry.engine_slow_request_ms}; default 2 s).
     *
     * @param threshold the threshold, not {@code null}, not negative (checked by {@link #build()})
     * @return this builder
     */
    public Builder engineSlowRequest(Duration threshold) {
      this.engineSlowRequest = Objects.requireNonNull(threshold, "engineSlowRequest");
      return this;
    }

    /**
     * Sets where the spans go ({@code telemetry.exporter}; default {@link ExporterKind#FILE}).
     *
     * @param exporter the exporter, not {@code null}
     * @return this builder
     */
    public Builder exporter(ExporterKind exporter) {
      this.exporter = Objects.requireNonNull(exporter, "exporter");
      return this;
    }

    /**
     * Sets the run id ({@code telemetry.run_id}).
     *
     * @param runId letters, digits, {@code .}, {@code _} and {@code -}, at most 128 (checked by {@link #build()});
     *     {@code null} or empty to have {@link #build()} generate one
     * @return this builder
     */
    public Builder runId(String runId) {
      this.runId = runId;
      return this;
    }

    /**
     * Sets the OpenTelemetry service name ({@code telemetry.service_name}; default {@code ravel}).
     *
     * @param serviceName the name, not blank (checked by {@link #build()})
     * @return this builder
     */
    public Builder serviceName(String serviceName) {
      this.serviceName = serviceName;
      return this;
    }

    /**
     * Attributes every process adds to its resource; keys {@code service.name} and {@code rl.*} are Ravel's.
     *
     * @param attributes the attributes by key, not {@code null}; copied, they replace any set before
     * @return this builder
     * @throws NullPointerException if {@code attributes} is {@code null}
     */
    public Builder resourceAttributes(Map<String, String> attributes) {
      this.resourceAttributes = new LinkedHashMap<>(Objects.requireNonNull(attributes, "resourceAttributes"));
      return this;
    }

    /**
     * Sets the folder that holds one folder per run ({@code telemetry.runs_dir}; default {@code runs}).
     *
     * @param runsDir the folder, not {@code null}; relative to the working directory unless absolute
     * @return this builder
     */
    public Builder runsDir(Path runsDir) {
      this.runsDir = Objects.requireNonNull(runsDir, "runsDir");
      return this;
    }

    /**
     * Sets the driver environment variables passed unchanged to every worker ({@code telemetry.env_passthrough}).
     *
     * @param names the variables' names, not {@code null}; blank ones are dropped by {@link #build()}
     * @return this builder
     */
    public Builder envPassthrough(Collection<String> names) {
      this.envPassthrough = new ArrayList<>(names);
      return this;
    }

    /**
     * Sets the upper bound on the flush at process shutdown ({@code telemetry.shutdown_timeout_ms}; default 5 s).
     *
     * @param timeout the bound, not {@code null}, positive (checked by {@link #build()})
     * @return this builder
     */
    public Builder shutdownTimeout(Duration timeout) {
      this.shutdownTimeout = Objects.requireNonNull(timeout, "shutdownTimeout");
      return this;
    }

    /**
     * Completions a GRPO step keeps in {@code samples.jsonl} ({@code telemetry.samples_per_step}; default 4).
     *
     * @param samples the number of completions, 0 for none, not negative (checked by {@link #build()})
     * @return this builder
     */
    public Builder samplesPerStep(int samples) {
      this.samplesPerStep = samples;
      return this;
    }

    /**
     * Sets the experiment trackers the step metrics also go to ({@code telemetry.trackers}; default none).
     *
     * @param trackers the trackers, not {@code null}; they replace any set before (a tracker named twice counts once)
     * @return this builder
     */
    public Builder trackers(Collection<TrackerKind> trackers) {
      this.trackers = new ArrayList<>(Objects.requireNonNull(trackers, "trackers"));
      return this;
    }

    /**
     * Validates and builds; a missing run id is generated ({@link #newRunId()}).
     *
     * @return the config
     * @throws ConfigException naming the key of the first invalid value
     */
    public TelemetryConfig build() {
      if (!(engineSampleRatio >= 0.0 && engineSampleRatio <= 1.0)) {
        throw new ConfigException(key("engine_sample_ratio"), "must be between 0.0 and 1.0, got " + engineSampleRatio);
      }
      if (engineSlowRequest.isNegative()) {
        throw new ConfigException(key("engine_slow_request_ms"), "must not be negative");
      }
      if (shutdownTimeout.isNegative() || shutdownTimeout.isZero()) {
        throw new ConfigException(key("shutdown_timeout_ms"), "must be positive, got " + shutdownTimeout.toMillis());
      }
      if (samplesPerStep < 0) {
        throw new ConfigException(key("samples_per_step"), "must not be negative, got " + samplesPerStep);
      }
      if (runId == null || runId.isEmpty()) {
        runId = newRunId();
      } else if (!RUN_ID.matcher(runId).matches()) {
        throw new ConfigException(key("run_id"), "'" + runId
            + "' is not a valid run id (letters, digits, '.', '_', '-'; at most 128; it names a folder)");
      }
      if (serviceName == null || serviceName.isBlank()) {
        throw new ConfigException(key("service_name"), "must not be empty");
      }
      for (String k : resourceAttributes.keySet()) {
        if (k.isBlank() || k.contains(",") || k.contains("=")) {
          throw new ConfigException(key("resource_attributes"), "'" + k + "' is not a valid attribute key");
        }
        if (k.equals("service.name")) {
          throw new ConfigException(key("resource_attributes"), "service.name is set by telemetry.service_name");
        }
        if (k.startsWith("rl.") || k.equals("process.pid")) {
          throw new ConfigException(key("resource_attributes"), "'" + k
              + "' is set by Ravel for every process (keys under rl.* and process.pid are reserved)");
        }
      }
      List<String> names = new ArrayList<>();
      for (String n : envPassthrough) {
        String name = n.trim();
        if (name.isEmpty()) {
          continue;
        }
        if (!ENV_NAME.matcher(name).matches()) {
          throw new ConfigException(key("env_passthrough"), "'" + name + "' is not an environment variable name");
        }
        names.add(name);
      }
      envPassthrough = names;
      boolean engine = engineTracing != null ? engineTracing : preset == Preset.ALL || extraGroups.contains(SpanGroup.ENGINE);
      return new TelemetryConfig(this, engine);
    }
  }
}
