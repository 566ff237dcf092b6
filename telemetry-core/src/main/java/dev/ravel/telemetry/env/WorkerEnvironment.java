package dev.ravel.telemetry.env;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.otlp.OtlpSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The environment every worker of a run starts with, built on purpose rather than inherited.
 * <ul>
 *   <li>Telemetry settings travel explicitly: the run's {@link TelemetryConfig} as
 *       {@code RAVEL_TELEMETRY_*}, the driver's resolved OTLP settings as {@code RAVEL_OTLP_*}.</li>
 *   <li>Trace-enabling {@code OTEL_*} variables that a worker would otherwise inherit from the shell that
 *       ran {@code ray start} ({@link #MASKED}) are set to the empty string, which masks them, unless
 *       engine tracing is on; then the traces-specific ones are set to the run's own resolved endpoint,
 *       so an engine that reads them (vLLM) exports where the run does.</li>
 *   <li>The variables named in {@code telemetry.env_passthrough} are copied from the driver.</li>
 * </ul>
 * OTLP headers (secrets) do not travel as values: Ray stores a runtime env and serves it back, so the
 * variables name an owner-only file ({@link #HEADERS_FILE}) that {@link #writeSecretFiles()} writes. When
 * engine tracing is on, the traces-specific headers variable is set too, for engines that only read their
 * environment. {@link #describe()} and {@link #toString()} mask secret values.
 */
public final class WorkerEnvironment {
  /** Variables masked unless engine tracing is on. */
  public static final List<String> MASKED = List.of(
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
      "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
      "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
      "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
      "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
      "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
      "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
      "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_HEADERS",
      "OTEL_EXPORTER_OTLP_CERTIFICATE",
      "OTEL_EXPORTER_OTLP_TIMEOUT",
      "OTEL_EXPORTER_OTLP_CLIENT_KEY",
      "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
      "OTEL_EXPORTER_OTLP_COMPRESSION",
      "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
      "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
      "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
      "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE",
      "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
      "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY",
      "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
      "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
      "OTEL_METRICS_EXPORTER",
      "OTEL_SERVICE_NAME",
      "OTEL_RESOURCE_ATTRIBUTES",
      "OTEL_TRACES_EXPORTER",
      "OTEL_TRACES_SAMPLER",
      "OTEL_TRACES_SAMPLER_ARG");

  private static final String MASK = "****";
  private static final String OTEL_PREFIX = "OTEL_";
  private static final String MLFLOW_PREFIX = "MLFLOW_";

  /** Names the file that holds the OTLP headers, instead of the headers themselves. */
  public static final String HEADERS_FILE = OtlpSettings.WORKER_PREFIX + "HEADERS_FILE";
  /** Names the file that holds the OTLP metrics headers. */
  public static final String METRICS_HEADERS_FILE = OtlpSettings.WORKER_METRICS_PREFIX + "HEADERS_FILE";

  private final Map<String, String> variables;
  private final Map<Path, String> secretFiles;

  private WorkerEnvironment(Map<String, String> variables, Map<Path, String> secretFiles) {
    this.variables = Collections.unmodifiableMap(variables);
    this.secretFiles = Collections.unmodifiableMap(secretFiles);
  }

  /**
   * Builds the environment for {@code config}.
   *
   * @param otlp the driver's resolved OTLP settings; used when the config exports over OTLP or engine
   *     tracing is on
   * @param driverEnv the driver's own environment, read only for {@code env_passthrough}
   * @throws ConfigException if a pass-through variable is one that the policy controls
   */
  public static WorkerEnvironment of(TelemetryConfig config, OtlpSettings otlp, Map<String, String> driverEnv) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(otlp, "otlp");
    Map<String, String> vars = new LinkedHashMap<>();
    for (String name : MASKED) {
      vars.put(name, "");
    }
    vars.putAll(config.toEnvironment());
    Map<Path, String> files = new LinkedHashMap<>();
    if (config.exporter().usesOtlp() || config.engineTracing()) {
      vars.putAll(otlp.toWorkerEnvironment());
      // Ray keeps a runtime env in its control store and serves it back (dashboard, job list):
      // the headers travel as an owner-only file named by the environment, not as a value in it
      headersToFile(vars, files, OtlpSettings.WORKER_PREFIX, config.runDir().resolve(".secrets").resolve("otlp-headers"));
      headersToFile(vars, files, OtlpSettings.WORKER_METRICS_PREFIX,
          config.runDir().resolve(".secrets").resolve("otlp-metrics-headers"));
    }
    if (config.engineTracing() && config.exporter().usesOtlp()) {
      vars.putAll(otlp.toTracesEnvironment());
      vars.put(OtlpSettings.TRACES_PREFIX + "HEADERS", ""); // masked: values stay out of Ray-stored environments
      // the engine's own sampler decides per request; its exporter follows the caller's decision
      vars.put("OTEL_TRACES_SAMPLER", "parentbased_always_on");
      // the engine's resource carries the run's own attributes (its service name stays its own)
      vars.put(TelemetryConfig.OTEL_RESOURCE_ATTRIBUTES, config.toEnvironment().get(TelemetryConfig.ENV_PREFIX + "RESOURCE_ATTRIBUTES"));
    }
    for (String name : config.envPassthrough()) {
      if (MASKED.contains(name) || name.startsWith(TelemetryConfig.ENV_PREFIX)
          || name.startsWith(OtlpSettings.WORKER_PREFIX)) {
        throw new ConfigException("telemetry.env_passthrough",
            name + " is set by Ravel's worker-environment policy and cannot be passed through"
                + (MASKED.contains(name) ? " (turn on telemetry.engine_tracing to let engines see OTLP settings)" : ""));
      }
      String v = driverEnv.get(name);
      if (v != null) {
        vars.put(name, v);
      }
    }
    return new WorkerEnvironment(vars, files);
  }

  private static void headersToFile(Map<String, String> vars, Map<Path, String> files, String prefix, Path file) {
    String headers = vars.remove(prefix + "HEADERS");
    if (headers != null && !headers.isEmpty()) {
      files.put(file, headers);
      vars.put(prefix + "HEADERS_FILE", file.toString());
    }
  }

  /**
   * Writes the files this environment names (the OTLP headers), readable by their owner only. Call once
   * before actors or jobs start with this environment; on a multi-node cluster the run folder must be on
   * storage every node sees.
   */
  public void writeSecretFiles() {
    for (Map.Entry<Path, String> e : secretFiles.entrySet()) {
      try {
        Files.createDirectories(e.getKey().getParent());
        Files.deleteIfExists(e.getKey());
        Files.createFile(e.getKey(), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(e.getKey(), e.getValue(), StandardCharsets.UTF_8);
      } catch (IOException ex) {
        throw new UncheckedIOException("cannot write " + e.getKey() + ": " + ex.getMessage(), ex);
      }
    }
  }

  /** The files {@link #writeSecretFiles()} writes. */
  public java.util.Set<Path> secretFilePaths() {
    return secretFiles.keySet();
  }

  /** The variables to put into the worker's runtime environment. Secret: may hold OTLP headers. */
  public Map<String, String> variables() {
    return variables;
  }

  /** Whether the policy masks {@code name} (sets it to the empty string). */
  public boolean masks(String name) {
    return "".equals(variables.get(name)) && MASKED.contains(name);
  }

  /** The variables, sorted, with secret values replaced by {@code ****}; safe to log. */
  public String describe() {
    StringBuilder sb = new StringBuilder();
    new TreeMap<>(variables).forEach((k, v) -> sb.append(k).append('=')
        .append(isSecret(k) && !v.isEmpty() ? MASK : v).append('\n'));
    return sb.toString();
  }

  /**
   * Whether {@code name} is a telemetry setting: any {@code OTEL_*} variable, any {@code MLFLOW_*} one (the
   * {@code mlflow} tracker's server and credentials, which only the driver uses), or one of Ravel's own
   * ({@code RAVEL_TELEMETRY_*}, {@code RAVEL_OTLP_*}). The one list both the worker policy and the local
   * head's environment ({@link HeadEnvironment}) go by.
   */
  public static boolean isTelemetryVariable(String name) {
    return name.startsWith(OTEL_PREFIX) || name.startsWith(MLFLOW_PREFIX) || name.startsWith(TelemetryConfig.ENV_PREFIX)
        || name.startsWith(OtlpSettings.WORKER_PREFIX);
  }

  /** Whether a variable's value must never be printed (headers, tokens, passwords, keys). */
  public static boolean isSecret(String name) {
    String n = name.toUpperCase(Locale.ROOT);
    return n.contains("HEADERS") || n.contains("TOKEN") || n.contains("SECRET") || n.contains("PASSWORD")
        || n.contains("CREDENTIAL") || n.contains("AUTH") || n.endsWith("_KEY") || n.contains("API_KEY");
  }

  @Override
  public String toString() {
    return "WorkerEnvironment{" + describe().replace('\n', ' ').trim() + "}";
  }
}
