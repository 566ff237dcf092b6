package dev.ravel.telemetry.env;

import dev.ravel.telemetry.config.TelemetryConfig;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The environment of a local Ray head that Ravel starts: the driver's own, minus every telemetry variable
 * (any {@code OTEL_*} and {@code MLFLOW_*}, and Ravel's {@code RAVEL_TELEMETRY_*} and {@code RAVEL_OTLP_*}; see
 * {@link WorkerEnvironment#isTelemetryVariable}) unless {@code telemetry.env_passthrough} names it. Every
 * process the head starts later (raylet, dashboard, agents, Python and Java workers, job entrypoints)
 * inherits from it, so an OTLP endpoint or auth header of the driver's would otherwise reach them all.
 * Workers get their telemetry settings explicitly, from {@link WorkerEnvironment}.
 */
public final class HeadEnvironment {
  private final Map<String, String> variables;
  private final List<String> passed;
  private final List<String> heldBack;

  private HeadEnvironment(Map<String, String> variables, List<String> passed, List<String> heldBack) {
    this.variables = Collections.unmodifiableMap(variables);
    this.passed = List.copyOf(passed);
    this.heldBack = List.copyOf(heldBack);
  }

  /** The head's environment for a driver with environment {@code driverEnv} and telemetry {@code config}. */
  public static HeadEnvironment of(TelemetryConfig config, Map<String, String> driverEnv) {
    Objects.requireNonNull(config, "config");
    Map<String, String> vars = new LinkedHashMap<>();
    List<String> passed = new ArrayList<>();
    List<String> held = new ArrayList<>();
    for (Map.Entry<String, String> e : new TreeMap<>(driverEnv).entrySet()) {
      String name = e.getKey();
      if (!WorkerEnvironment.isTelemetryVariable(name)) {
        vars.put(name, e.getValue());
      } else if (config.envPassthrough().contains(name)) {
        vars.put(name, e.getValue());
        passed.add(name);
      } else {
        held.add(name);
      }
    }
    return new HeadEnvironment(vars, passed, held);
  }

  /** The variables the head starts with. Not for printing: other variables may hold secrets. */
  public Map<String, String> variables() {
    return variables;
  }

  /** Telemetry variables of the driver's passed to the head because {@code telemetry.env_passthrough} names them. */
  public List<String> passed() {
    return passed;
  }

  /** Telemetry variables of the driver's held back from the head. */
  public List<String> heldBack() {
    return heldBack;
  }

  /** One line of names only (never values): which telemetry variables were held back and which passed. */
  public String summary() {
    return "held back " + (heldBack.isEmpty() ? "none" : String.join(", ", heldBack)) + "; passed "
        + (passed.isEmpty() ? "none" : String.join(", ", passed) + " (telemetry.env_passthrough)");
  }

  @Override
  public String toString() {
    return "HeadEnvironment{" + summary() + "}";
  }
}
