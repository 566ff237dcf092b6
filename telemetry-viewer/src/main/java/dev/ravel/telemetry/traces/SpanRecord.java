package dev.ravel.telemetry.traces;

import dev.ravel.telemetry.spans.RavelAttributes;
import io.opentelemetry.api.common.AttributeKey;
import java.util.List;
import java.util.Map;

/**
 * One span as read back from OTLP JSON (a file or a backend): ids in lowercase hex, times in epoch
 * nanoseconds, attribute values as strings, numbers or booleans.
 *
 * @param traceId the trace's id, 32 hex digits
 * @param spanId the span's id, 16 hex digits
 * @param parentSpanId the parent span's id; empty for a root span
 * @param name the span's name
 * @param kind 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer
 * @param startNanos the span's start, in nanoseconds since the epoch
 * @param endNanos the span's end, in nanoseconds since the epoch
 * @param statusCode 0 unset, 1 ok, 2 error (OTLP's integers)
 * @param statusMessage the status's description; empty when there is none
 * @param attributes the span's attributes, by key
 * @param resource the attributes of the span's resource (service.name, rl.run.id, rl.process.role, ...)
 * @param events the span's events, in the order read
 * @param links the span's links to other spans
 * @param source where the span was read from (for a run folder's file, {@code <file>:<line>})
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

  /**
   * Makes a span record: a {@code null} parent span id becomes empty, and the maps and lists are copied
   * (unmodifiable).
   *
   * @param traceId the trace's id
   * @param spanId the span's id
   * @param parentSpanId the parent span's id; {@code null} or empty for a root span
   * @param name the span's name
   * @param kind the span's kind, as OTLP's integer
   * @param startNanos the span's start, in nanoseconds since the epoch
   * @param endNanos the span's end, in nanoseconds since the epoch
   * @param statusCode the status code, as OTLP's integer
   * @param statusMessage the status's description
   * @param attributes the span's attributes, by key
   * @param resource the attributes of the span's resource
   * @param events the span's events
   * @param links the span's links to other spans
   * @param source where the span was read from
   * @throws NullPointerException if {@code attributes}, {@code resource}, {@code events} or {@code links} is
   *     {@code null} or holds a {@code null}
   */
  public SpanRecord {
    parentSpanId = parentSpanId == null ? "" : parentSpanId;
    attributes = Map.copyOf(attributes);
    resource = Map.copyOf(resource);
    events = List.copyOf(events);
    links = List.copyOf(links);
  }

  /** {@return whether the span has no parent} */
  public boolean isRoot() {
    return parentSpanId.isEmpty();
  }

  /** {@return whether the span's status is error} */
  public boolean isError() {
    return statusCode == 2;
  }

  /** {@return the span's duration in nanoseconds; 0 when its end precedes its start} */
  public long durationNanos() {
    return Math.max(0, endNanos - startNanos);
  }

  /**
   * {@return the span's value of {@code key} as it was read back (a string, number or boolean), or null}
   *
   * @param key the attribute's key
   */
  public Object attribute(AttributeKey<?> key) {
    return attributes.get(key.getKey());
  }

  /**
   * {@return the resource's value of {@code key} as it was read back, or null}
   *
   * @param key the attribute's key
   */
  public Object resourceAttribute(AttributeKey<?> key) {
    return resource.get(key.getKey());
  }

  /** {@return the resource's {@code service.name}; empty when absent} */
  public String service() {
    return text(resourceAttribute(RavelAttributes.SERVICE_NAME), "");
  }

  /** {@return the resource's {@code rl.process.role}; empty when absent} */
  public String role() {
    return text(resourceAttribute(RavelAttributes.PROCESS_ROLE), "");
  }

  /** {@return the resource's {@code rl.run.id}; empty when absent} */
  public String runId() {
    return text(resourceAttribute(RavelAttributes.RUN_ID), "");
  }

  /** {@return the process that emitted the span: {@code <role>/<pid>}, with {@code ?} for a missing pid} */
  public String process() {
    return role() + "/" + text(resourceAttribute(RavelAttributes.PROCESS_PID), "?");
  }

  private static String text(Object value, String absent) {
    return value == null ? absent : String.valueOf(value);
  }

  /**
   * A span event.
   *
   * @param name the event's name
   * @param timeNanos when the event happened, in nanoseconds since the epoch
   * @param attributes the event's attributes, by key
   */
  public record Event(String name, long timeNanos, Map<String, Object> attributes) {
    /**
     * Makes an event; {@code attributes} is copied (unmodifiable).
     *
     * @param name the event's name
     * @param timeNanos when the event happened, in nanoseconds since the epoch
     * @param attributes the event's attributes, by key
     * @throws NullPointerException if {@code attributes} is {@code null} or holds a {@code null}
     */
    public Event {
      attributes = Map.copyOf(attributes);
    }
  }

  /**
   * A link to another span.
   *
   * @param traceId the linked span's trace id
   * @param spanId the linked span's id
   * @param attributes the link's attributes, by key
   */
  public record Link(String traceId, String spanId, Map<String, Object> attributes) {
    /**
     * Makes a link; {@code attributes} is copied (unmodifiable).
     *
     * @param traceId the linked span's trace id
     * @param spanId the linked span's id
     * @param attributes the link's attributes, by key
     * @throws NullPointerException if {@code attributes} is {@code null} or holds a {@code null}
     */
    public Link {
      attributes = Map.copyOf(attributes);
    }
  }
}
