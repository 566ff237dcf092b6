package dev.ravel.telemetry.sdk;

import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.otlp.OtlpSettings;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.Spans;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.export.PeriodicMetricReader;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process's telemetry: an OpenTelemetry SDK with a batch span processor feeding the run's exporters
 * (JSON Lines under {@code runs/<run-id>/} and/or OTLP), a resource that names the run and the process
 * ({@code service.name}, {@code rl.run.id}, {@code rl.process.role}, plus e.g. Ray ids), counts of spans
 * exported and dropped, and a flush bounded by {@link TelemetryConfig#shutdownTimeout()} on close.
 *
 * <pre>{@code
 * try (ProcessTelemetry t = ProcessTelemetry.builder(config).role("driver").otlp(settings).start()) {
 *   try (var s = t.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP)) { ... }
 * }
 * }</pre>
 * Every span is sampled ({@code rl.*} spans are never thinned); the engine samples its own spans.
 */
public final class ProcessTelemetry implements AutoCloseable {
  /** How a process's metrics file in the run folder starts: {@code metrics-<role>-<pid>.jsonl} (no spans in it). */
  public static final String METRICS_FILE_PREFIX = "metrics-";

  private static final Logger LOG = LoggerFactory.getLogger(ProcessTelemetry.class);

  /**
   * Links a span may carry (the SDK's default is 128): an async step links to every generate call that
   * produced one of its trajectories, as many as its groups when a call carries one group.
   */
  public static final int MAX_LINKS = 8192;

  private final TelemetryConfig config;
  private final String role;
  private final Resource resource;
  private final OpenTelemetrySdk sdk;
  private final Spans spans;
  private final Counters counters;
  private final Path spanFile;
  /** The counts when the telemetry closed: what was still queued counted as dropped. */
  private volatile ExportStats closedStats;
  /** The name of the file exporter's counts in {@link ExportStats#exporters()}. */
  public static final String FILE_EXPORTER = "file";
  /** The name of the OTLP exporter's counts in {@link ExportStats#exporters()}. */
  public static final String OTLP_EXPORTER = "otlp";
  private final SdkMeterProvider meters;
  private final OtlpSettings otlp;
  private final int maxQueueSize;
  private volatile boolean closed;

  /** The host's name as the kernel has it (no name lookup, which can hang where no resolver answers). */
  static String hostName() {
    try {
      String n = java.nio.file.Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
      if (!n.isEmpty()) {
        return n;
      }
    } catch (java.io.IOException | RuntimeException e) {
      // not Linux: the environment's or Java's own name below
    }
    String env = System.getenv("HOSTNAME");
    if (env != null && !env.isBlank()) {
      return env.strip();
    }
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException e) {
      return "unknown";
    }
  }

  private ProcessTelemetry(Builder b) {
    this.config = b.config;
    this.role = b.role;
    this.counters = new Counters();
    io.opentelemetry.api.common.AttributesBuilder attrs = Attributes.builder();
    config.resourceAttributes().forEach(attrs::put); // the user's first: Ravel's own keys win
    this.resource = Resource.getDefault().merge(Resource.create(attrs
        .put(RavelAttributes.SERVICE_NAME, config.serviceName())
        .put(RavelAttributes.RUN_ID, config.runId())
        .put(RavelAttributes.PROCESS_ROLE, role)
        .put(RavelAttributes.PROCESS_PID, ProcessHandle.current().pid())
        .put(RavelAttributes.HOST_NAME, hostName())
        .putAll(b.resource.build())
        .build()));

    // an export queue per exporter: a backend that is down or slow holds back no other exporter
    java.util.Map<String, SpanExporter> exporters = new java.util.LinkedHashMap<>();
    Path file = null;
    if (config.exporter().writesFiles()) {
      file = config.runDir().resolve("traces-" + role + "-" + ProcessHandle.current().pid() + ".jsonl");
      exporters.put(FILE_EXPORTER, counters.counting(FILE_EXPORTER, Exporters.jsonLines(file), "file " + file));
    }
    if (config.exporter().usesOtlp()) {
      OtlpSettings otlp = Objects.requireNonNull(b.otlp, "OTLP settings are required for exporter " + config.exporter());
      exporters.put(OTLP_EXPORTER, counters.counting(OTLP_EXPORTER, Exporters.otlp(otlp), "OTLP " + otlp.endpoint()));
    }
    this.spanFile = file;
    this.otlp = config.exporter().usesOtlp() ? b.otlp : null;
    this.maxQueueSize = b.maxQueueSize;
    io.opentelemetry.sdk.metrics.SdkMeterProviderBuilder mp = SdkMeterProvider.builder().setResource(resource);
    if (config.enabled() && config.exporter().writesFiles()) {
      Path metricsFile = config.runDir().resolve(METRICS_FILE_PREFIX + role + "-" + ProcessHandle.current().pid() + ".jsonl");
      mp.registerMetricReader(PeriodicMetricReader.builder(Exporters.jsonLinesMetrics(metricsFile))
          .setInterval(b.metricInterval).build());
    }
    if (config.enabled() && config.exporter().usesOtlp() && b.otlp.metrics().isPresent()) {
      mp.registerMetricReader(PeriodicMetricReader.builder(Exporters.otlpMetrics(b.otlp.metrics().get()))
          .setInterval(b.metricInterval).build());
    }
    this.meters = mp.build();
    io.opentelemetry.sdk.trace.SdkTracerProviderBuilder tp = SdkTracerProvider.builder().setResource(resource)
        .setSampler(Sampler.alwaysOn())
        .setSpanLimits(io.opentelemetry.sdk.trace.SpanLimits.builder().setMaxNumberOfLinks(MAX_LINKS).build());
    tp.addSpanProcessor(counters.endCounter());
    exporters.forEach((name, exporter) -> tp.addSpanProcessor(BatchSpanProcessor.builder(exporter)
        .setScheduleDelay(b.scheduleDelay)
        .setMaxQueueSize(b.maxQueueSize)
        .setMaxExportBatchSize(Math.min(512, b.maxQueueSize))
        .setMeterProvider(counters.exporter(name).selfMeters)
        .build()));
    this.sdk = OpenTelemetrySdk.builder()
        .setTracerProvider(tp.build())
        .setMeterProvider(meters)
        .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
        .build();
    this.spans = config.enabled() ? Spans.create(sdk, config.groups()) : Spans.noop();
  }

  /** Starts building the telemetry of this process for {@code config}. */
  public static Builder builder(TelemetryConfig config) {
    return new Builder(config);
  }

  public OpenTelemetry openTelemetry() {
    return sdk;
  }

  public Spans spans() {
    return spans;
  }

  public TelemetryConfig config() {
    return config;
  }

  public String role() {
    return role;
  }

  public Resource resource() {
    return resource;
  }

  /** The JSON Lines file this process writes, when the exporter writes files. */
  public Optional<Path> spanFile() {
    return Optional.ofNullable(spanFile);
  }

  /**
   * A relay of spans other processes recorded (a launched inference server's, received by the run) to this process's
   * OTLP backend, with its settings, through a queue of its own; empty when this process exports no spans over OTLP.
   * The caller closes it.
   */
  public Optional<SpanRelay> otlpRelay() {
    if (!config.enabled() || otlp == null) {
      return Optional.empty();
    }
    return Optional.of(SpanRelay.create(Exporters.otlp(otlp), maxQueueSize, Duration.ofSeconds(10), role));
  }

  /** Current counts of this process's spans. */
  public ExportStats stats() {
    ExportStats c = closedStats;
    return c != null ? c : counters.snapshot();
  }

  /** Exports what is queued, waiting at most {@code timeout}; false if it did not finish in time. */
  public boolean flush(Duration timeout) {
    CompletableResultCode r = CompletableResultCode.ofAll(List.of(
        sdk.getSdkTracerProvider().forceFlush(), meters.forceFlush()));
    r.join(timeout.toMillis(), TimeUnit.MILLISECONDS);
    return r.isDone() && r.isSuccess();
  }

  /** Flushes and shuts down, bounded by the configured shutdown timeout. Never throws. */
  @Override
  public void close() {
    close(config.shutdownTimeout());
  }

  /**
   * Flushes and shuts down within {@code timeout}; what could not be exported by then is counted as dropped
   * ({@link ExportStats#closed}). Never throws.
   */
  public void close(Duration timeout) {
    if (closed) {
      return;
    }
    closed = true;
    long budget = Math.max(1, timeout.toMillis());
    // the SDK's own shutdown can block past any bound (a periodic metric reader exports once more,
    // synchronously, to a backend that may be down): it runs on a daemon thread that is waited for at most
    // the budget, and what is not exported by then is counted as dropped
    Thread t = new Thread(() -> shutdownSdk(budget), "ravel-telemetry-close-" + role);
    t.setDaemon(true);
    t.start();
    try {
      t.join(budget + 200);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    ExportStats s = counters.snapshot().closed();
    closedStats = s;
    if (t.isAlive() || s.exporters().values().stream().anyMatch(e -> e.failed() > 0 || e.dropped() > 0)) {
      LOG.warn("telemetry of {} ({}) closed with {}{}", role, config.runId(), s,
          t.isAlive() ? " (its exporters had not finished within " + budget + " ms)" : "");
    }
  }

  private void shutdownSdk(long budget) {
    long start = System.nanoTime();
    try {
      flush(Duration.ofMillis(budget));
      long left = Math.max(1, budget - (System.nanoTime() - start) / 1_000_000);
      sdk.getSdkTracerProvider().shutdown().join(left, TimeUnit.MILLISECONDS);
      meters.shutdown().join(Math.max(1, budget - (System.nanoTime() - start) / 1_000_000), TimeUnit.MILLISECONDS);
      counters.close();
    } catch (RuntimeException e) {
      LOG.warn("telemetry shutdown of {} failed: {}", role, e.toString());
    }
  }


  /** Builds a {@link ProcessTelemetry}. */
  public static final class Builder {
    private final TelemetryConfig config;
    private String role = "driver";
    private OtlpSettings otlp;
    private final io.opentelemetry.api.common.AttributesBuilder resource = Attributes.builder();
    private Duration scheduleDelay = Duration.ofMillis(500);
    private int maxQueueSize = 8192;
    private Duration metricInterval = Duration.ofSeconds(10);

    private Builder(TelemetryConfig config) {
      this.config = Objects.requireNonNull(config, "config");
    }

    /** The process role ({@code driver}, {@code generation_worker}, ...); it names the span file. */
    public Builder role(String role) {
      if (role == null || !role.matches("[a-z0-9_.-]+")) {
        throw new IllegalArgumentException("role must be lower-case letters, digits, '_', '.', '-': " + role);
      }
      this.role = role;
      return this;
    }

    /** The resolved OTLP settings, required when the exporter is {@code otlp} or {@code both}. */
    public Builder otlp(OtlpSettings otlp) {
      this.otlp = otlp;
      return this;
    }

    /** Adds a resource attribute (for example {@code ray.actor.id}). */
    public <T> Builder resource(AttributeKey<T> key, T value) {
      if (value != null) {
        resource.put(key, value);
      }
      return this;
    }

    /** How often queued spans are exported (default 500 ms). */
    public Builder scheduleDelay(Duration delay) {
      this.scheduleDelay = Objects.requireNonNull(delay);
      return this;
    }

    /** Spans queued for export before new ones are dropped (default 8192). */
    public Builder maxQueueSize(int size) {
      if (size < 1) {
        throw new IllegalArgumentException("maxQueueSize must be positive: " + size);
      }
      this.maxQueueSize = size;
      return this;
    }

    /** How often metrics are exported (default 10 s; always once more at close). */
    public Builder metricInterval(Duration interval) {
      this.metricInterval = Objects.requireNonNull(interval);
      return this;
    }

    public ProcessTelemetry start() {
      if (config.exporter().usesOtlp() && otlp == null) {
        throw new IllegalStateException("exporter " + config.exporter().configName() + " needs OTLP settings");
      }
      return new ProcessTelemetry(this);
    }
  }
}
