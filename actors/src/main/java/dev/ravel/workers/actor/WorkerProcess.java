package dev.ravel.workers.actor;

import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.otlp.OtlpSettings;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.telemetry.spans.RavelAttributes;
import io.ray.api.Ray;
import io.ray.api.runtimecontext.RuntimeContext;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The telemetry of an actor's worker process, started once from the environment that the driver's
 * worker-environment policy built ({@code RAVEL_TELEMETRY_*}, {@code RAVEL_OTLP_*}) and closed, with a
 * bounded flush, when the process exits.
 */
final class WorkerProcess {
  private static final Logger LOG = LoggerFactory.getLogger(WorkerProcess.class);
  private static ProcessTelemetry telemetry;

  private WorkerProcess() {}

  static synchronized ProcessTelemetry telemetry(String role) {
    if (telemetry == null) {
      telemetry = start(role, System.getenv());
      ProcessTelemetry t = telemetry;
      Runtime.getRuntime().addShutdownHook(new Thread(t::close, "ravel-telemetry-shutdown"));
    }
    return telemetry;
  }

  /**
   * The parent of this actor's start-up spans: the span the driver named in {@link TraceCarrier#STARTUP_ENV} when it
   * created the actor; null without one, or when Ray restarted the actor (its constructor then runs outside the run's
   * start-up, and the variable still names the first creation).
   */
  static io.opentelemetry.context.Context startupParent() {
    io.opentelemetry.context.Context parent = TraceCarrier.fromEnvironment(System.getenv(), TraceCarrier.STARTUP_ENV);
    if (parent == null) {
      return null;
    }
    try {
      return Ray.getRuntimeContext().wasCurrentActorRestarted() ? null : parent;
    } catch (RuntimeException e) { // not in a Ray actor (an in-process one): its first and only start
      LOG.debug("no Ray runtime context to tell a restart: {}", e.toString());
      return parent;
    }
  }

  private static ProcessTelemetry start(String role, Map<String, String> env) {
    TelemetryConfig config;
    String runId = env.get(TelemetryConfig.ENV_PREFIX + "RUN_ID");
    if (runId == null || runId.isEmpty()) {
      LOG.warn("actor {} started without Ravel's worker environment (no {}RUN_ID): its telemetry is off."
          + " Create actors with RavelActors so the environment policy applies.", role, TelemetryConfig.ENV_PREFIX);
      config = TelemetryConfig.builder().enabled(false).exporter(ExporterKind.NONE).build();
    } else {
      config = TelemetryConfig.fromMap(Map.of(), env);
    }
    ProcessTelemetry.Builder b = ProcessTelemetry.builder(config).role(role);
    if (config.exporter().usesOtlp()) {
      b.otlp(OtlpSettings.fromWorkerEnvironment(env));
    }
    try {
      RuntimeContext ctx = Ray.getRuntimeContext();
      b.resource(RavelAttributes.RAY_JOB_ID, String.valueOf(ctx.getCurrentJobId()));
      b.resource(RavelAttributes.RAY_ACTOR_ID, String.valueOf(ctx.getCurrentActorId()));
      b.resource(RavelAttributes.RAY_NODE_ID, String.valueOf(ctx.getCurrentNodeId()));
      nodeAddress(ctx).ifPresent(ip -> b.resource(RavelAttributes.RAY_NODE_IP, ip));
    } catch (RuntimeException e) {
      LOG.debug("no Ray runtime context for telemetry resource: {}", e.toString());
    }
    return b.start();
  }

  /** The address of the node this process runs on, as the cluster registered it. */
  private static java.util.Optional<String> nodeAddress(RuntimeContext ctx) {
    try {
      io.ray.api.id.UniqueId self = ctx.getCurrentNodeId();
      return ctx.getAllNodeInfo().stream().filter(n -> n.nodeId.equals(self)).map(n -> n.nodeAddress).findFirst();
    } catch (RuntimeException e) {
      LOG.debug("no node address for the telemetry resource: {}", e.toString());
      return java.util.Optional.empty();
    }
  }
}
