package dev.ravel.telemetry.traces;

import dev.ravel.telemetry.spans.RavelAttributes;
import io.opentelemetry.api.common.AttributeKey;
import java.util.List;
import java.util.Map;

/**
 * One span as read back from OTLP JSON (a file or a backend): ids in lowercase hex, times in epoch
 * nanoseconds, attribute values as strings, numbers or booleans.
 *
 * @param resource the attributes of the span's resource (service.name, rl.run.id, rl.process.role, ...)
 * @param statusCode 0 unset, 1 ok, 2 error (OTLP's integers)
 * @param kind 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer
 */
public record SpanRecord(
    String traceId,
    String spanId,
    String parentSpanId,
    String name,
    int kind,
    long startNanos,
    long endNanos,
    int statusCode,
    String statusMessage,
    Map<String, Object> attributes,
    Map<String, Object> resource,
    List<Event> events,
    List<Link> links,
    String source) {

  public SpanRecord {
    parentSpanId = parentSpanId == null ? "" : parentSpanId;
    attributes = Map.copyOf(attributes);
    resource = Map.copyOf(resource);
    events = List.copyOf(events);
    links = List.copyOf(links);
  }

  public boolean isRoot() {
    return parentSpanId.isEmpty();
  }

  public boolean isError() {
    return statusCode == 2;
  }

  public long durationNanos() {
    return Math.max(0, endNanos - startNanos);
  }

  /** The span's value of {@code key} as it was read back (a string, number or boolean), or null. */
  public Object attribute(AttributeKey<?> key) {
    return attributes.get(key.getKey());
  }

  /** The resource's value of {@code key} as it was read back, or null. */
  public Object resourceAttribute(AttributeKey<?> key) {
    return resource.get(key.getKey());
  }

  /** The resource's {@code service.name}. */
  public String service() {
    return text(resourceAttribute(RavelAttributes.SERVICE_NAME), "");
  }

  /** The resource's {@code rl.process.role}. */
  public String role() {
    return text(resourceAttribute(RavelAttributes.PROCESS_ROLE), "");
  }

  /** The resource's {@code rl.run.id}. */
  public String runId() {
    return text(resourceAttribute(RavelAttributes.RUN_ID), "");
  }

  /** The process that emitted the span: role and pid. */
  public String process() {
    return role() + "/" + text(resourceAttribute(RavelAttributes.PROCESS_PID), "?");
  }

  private static String text(Object value, String absent) {
    return value == null ? absent : String.valueOf(value);
  }

  /** A span event. */
  public record Event(String name, long timeNanos, Map<String, Object> attributes) {
    public Event {
      attributes = Map.copyOf(attributes);
    }
  }

  /** A link to another span. */
  public record Link(String traceId, String spanId, Map<String, Object> attributes) {
    public Link {
      attributes = Map.copyOf(attributes);
    }
  }
}
