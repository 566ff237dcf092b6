package dev.ravel.driver.jobs;

import dev.ravel.telemetry.env.WorkerEnvironment;
import java.util.LinkedHashMap;
import java.util.Map;

/** Copies of runtime environments and metadata that are safe to print: secret-looking values masked. */
final class Redaction {
  static final String MASK = "****";

  private Redaction() {}

  /** {@code runtime_env} with each {@code env_vars} value whose name looks secret replaced by {@code ****}. */
  static Map<String, Object> runtimeEnv(Map<String, Object> runtimeEnv) {
    Map<String, Object> out = new LinkedHashMap<>(runtimeEnv);
    if (runtimeEnv.get(JobRequest.ENV_VARS) instanceof Map<?, ?> vars) {
      Map<String, Object> masked = new LinkedHashMap<>();
      vars.forEach((k, v) -> masked.put(String.valueOf(k), mask(String.valueOf(k), v)));
      out.put(JobRequest.ENV_VARS, masked);
    }
    return out;
  }

  /** Metadata with each value whose key looks secret replaced by {@code ****}. */
  static Map<String, String> metadata(Map<String, String> metadata) {
    Map<String, String> out = new LinkedHashMap<>();
    metadata.forEach((k, v) -> out.put(k, String.valueOf(mask(k, v))));
    return out;
  }

  /** {@code text} with every secret-looking value of {@code request}'s env_vars and metadata replaced by {@code ****}. */
  static String scrub(String text, JobRequest request) {
    String out = text;
    for (Map<String, String> m : java.util.List.of(request.envVars(), request.metadata())) {
      for (Map.Entry<String, String> e : m.entrySet()) {
        if (WorkerEnvironment.isSecret(e.getKey()) && e.getValue().length() >= 4) {
          out = out.replace(e.getValue(), MASK);
        }
      }
    }
    return out;
  }

  private static Object mask(String name, Object value) {
    return WorkerEnvironment.isSecret(name) && value != null && !String.valueOf(value).isEmpty() ? MASK : value;
  }
}
