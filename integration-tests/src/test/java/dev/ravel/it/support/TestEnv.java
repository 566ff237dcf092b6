package dev.ravel.it.support;

import java.util.HashMap;
import java.util.Map;

/** The environment a test driver runs with: this JVM's, without any OTEL_* or RAVEL_* variable. */
public final class TestEnv {
  private TestEnv() {}

  public static Map<String, String> clean() {
    Map<String, String> env = new HashMap<>(System.getenv());
    env.keySet().removeIf(k -> k.startsWith("OTEL_") || k.startsWith("RAVEL_TELEMETRY_") || k.startsWith("RAVEL_OTLP_")
        || k.equals("RAY_ADDRESS"));
    return env;
  }
}
