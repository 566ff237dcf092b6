package dev.ravel.workers.serve;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.otlp.OtlpSettings;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The telemetry of a {@code ravel serve} process, role {@value #ROLE}. Launched by a worker (its
 * environment holds {@code RAVEL_TELEMETRY_RUN_ID}) it starts as a worker process does: the config from
 * the {@code RAVEL_TELEMETRY_*} variables and OTLP from the {@code RAVEL_OTLP_*} ones the driver resolved.
 * Standalone it resolves them as {@code ravel run} does for its driver: {@code RAVEL_TELEMETRY_*}
 * variables, OTLP from the standard {@code OTEL_EXPORTER_OTLP_*} variables (or from {@code RAVEL_OTLP_*}
 * when a submitter passed them on), and a new run id. In both cases {@code --telemetry key=value}
 * overrides win over the environment, as {@code telemetry.key=value} does for {@code ravel run}.
 */
final class ServeTelemetry {
  static final String ROLE = "inference_server";

  private ServeTelemetry() {}

  /** Whether {@code env} is a worker's environment (built by the driver's worker-environment policy). */
  static boolean launchedByWorker(Map<String, String> env) {
    String runId = env.get(TelemetryConfig.ENV_PREFIX + "RUN_ID");
    return runId != null && !runId.isEmpty();
  }

  /** The resolved config: the environment, then the overrides (keys of {@link TelemetryConfig#KEYS}). */
  static TelemetryConfig config(Map<String, String> env, Map<String, String> overrides) {
    Map<String, String> telemetryEnv = new LinkedHashMap<>(env);
    Map<String, Object> section = new LinkedHashMap<>();
    for (Map.Entry<String, String> o : overrides.entrySet()) {
      String key = o.getKey().startsWith("telemetry.") ? o.getKey().substring("telemetry.".length()) : o.getKey();
      if (!TelemetryConfig.KEYS.contains(key)) {
        throw new ConfigException("--telemetry " + o.getKey(), "unknown key (valid: "
            + String.join(", ", TelemetryConfig.KEYS) + ")");
      }
      section.put(key, o.getValue());
      telemetryEnv.remove(TelemetryConfig.ENV_PREFIX + key.toUpperCase(Locale.ROOT));
    }
    return TelemetryConfig.fromMap(section, telemetryEnv);
  }

  /** The OTLP settings: a worker's passed-on ones, else resolved as the driver resolves them. */
  static OtlpSettings otlp(Map<String, String> env) {
    if (launchedByWorker(env) || OtlpSettings.inWorkerEnvironment(env)) {
      return OtlpSettings.fromWorkerEnvironment(env);
    }
    return OtlpSettings.resolve(env);
  }

  /** Starts the process's telemetry; close it to flush (bounded by its shutdown timeout). */
  static ProcessTelemetry start(Map<String, String> env, Map<String, String> overrides) {
    TelemetryConfig config = config(env, overrides);
    ProcessTelemetry.Builder b = ProcessTelemetry.builder(config).role(ROLE);
    if (config.exporter().usesOtlp()) {
      b.otlp(otlp(env));
    }
    return b.start();
  }
}
