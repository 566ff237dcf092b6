package dev.ravel.workers.demo;

import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.otlp.OtlpSettings;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.actor.RavelActor;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Context;
import java.util.List;
import java.util.Map;

/** {@link Responder} on Ray. */
public final class ResponderActor extends RavelActor implements Responder {
  private volatile ProcessTelemetry engineTelemetry;

  public ResponderActor() {}

  @Override
  public String respond(String message) {
    emitEngineSpan(message);
    return "responder pid " + ProcessHandle.current().pid() + ": " + message;
  }

  @Override
  public String fail(String message) {
    throw new IllegalStateException(message);
  }

  @Override
  public Map<String, String> environment(List<String> names) {
    return Environments.view(names);
  }

  /**
   * What vLLM's worker processes do: trace iff OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is present in the
   * process environment, exporting there (resolved with the one OTLP resolution). Whether such an engine
   * traces is thus decided by the worker-environment policy, not by what the raylet's shell exported.
   */
  private void emitEngineSpan(String message) {
    String endpoint = System.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    if (endpoint == null || endpoint.isEmpty()) {
      return;
    }
    ProcessTelemetry t = engineTelemetry;
    if (t == null) {
      synchronized (this) {
        if (engineTelemetry == null) {
          engineTelemetry = ProcessTelemetry.builder(telemetry().config().toBuilder()
                  .enabled(true).exporter(ExporterKind.OTLP).serviceName("engine").build())
              .role("engine")
              .otlp(OtlpSettings.resolve(System.getenv()))
              .start();
          Runtime.getRuntime().addShutdownHook(new Thread(engineTelemetry::close, "engine-telemetry-shutdown"));
        }
        t = engineTelemetry;
      }
    }
    Span span = t.openTelemetry().getTracer("engine").spanBuilder(SpanNames.LLM_REQUEST)
        .setParent(Context.current()).setSpanKind(SpanKind.SERVER).startSpan();
    span.setAttribute(EngineNames.REQUEST_ID, Integer.toHexString(message.hashCode()));
    span.end();
    t.flush(java.time.Duration.ofSeconds(5));
  }
}
