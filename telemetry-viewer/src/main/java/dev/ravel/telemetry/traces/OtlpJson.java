package dev.ravel.telemetry.traces;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads OTLP JSON ({@code TracesData}: {@code {"resourceSpans":[...]}}) into {@link SpanRecord}s,
 * following the OTLP JSON rules: ids as hex, 64-bit numbers as decimal strings (numbers accepted too),
 * enums as integers, lowerCamelCase keys (snake_case accepted, as some writers use it).
 */
final class OtlpJson {
  private OtlpJson() {}

  /** The spans of one {@code TracesData} object; {@code source} names where it came from. */
  public static List<SpanRecord> spans(JsonNode tracesData, String source) {
    List<SpanRecord> out = new ArrayList<>();
    JsonNode resourceSpans = field(tracesData, "resourceSpans", "resource_spans");
    if (resourceSpans == null || !resourceSpans.isArray()) {
      throw new IllegalArgumentException("no resourceSpans array");
    }
    for (JsonNode rs : resourceSpans) {
      JsonNode res = field(rs, "resource");
      Map<String, Object> resource = attributes(res == null ? null : field(res, "attributes"));
      JsonNode scopeSpans = field(rs, "scopeSpans", "scope_spans", "instrumentationLibrarySpans");
      if (scopeSpans == null) {
        continue;
      }
      for (JsonNode ss : scopeSpans) {
        JsonNode spans = field(ss, "spans");
        if (spans == null) {
          continue;
        }
        for (JsonNode s : spans) {
          out.add(span(s, resource, source));
        }
      }
    }
    return out;
  }

  private static SpanRecord span(JsonNode s, Map<String, Object> resource, String source) {
    JsonNode status = field(s, "status");
    List<SpanRecord.Event> events = new ArrayList<>();
    JsonNode ev = field(s, "events");
    if (ev != null) {
      for (JsonNode e : ev) {
        events.add(new SpanRecord.Event(text(e, "name"), nanos(e, "timeUnixNano", "time_unix_nano"),
            attributes(field(e, "attributes"))));
      }
    }
    List<SpanRecord.Link> links = new ArrayList<>();
    JsonNode ln = field(s, "links");
    if (ln != null) {
      for (JsonNode l : ln) {
        links.add(new SpanRecord.Link(hex(l, "traceId", "trace_id"), hex(l, "spanId", "span_id"),
            attributes(field(l, "attributes"))));
      }
    }
    String traceId = hex(s, "traceId", "trace_id");
    String spanId = hex(s, "spanId", "span_id");
    if (traceId.length() != 32 || spanId.length() != 16) {
      throw new IllegalArgumentException("span '" + text(s, "name") + "' has malformed ids");
    }
    return new SpanRecord(traceId, spanId, hex(s, "parentSpanId", "parent_span_id"), text(s, "name"),
        integer(s, "kind"), nanos(s, "startTimeUnixNano", "start_time_unix_nano"),
        nanos(s, "endTimeUnixNano", "end_time_unix_nano"), status == null ? 0 : integer(status, "code"),
        status == null ? "" : text(status, "message"), spanAttributes(field(s, "attributes")), resource, events,
        links, source);
  }

  /**
   * A span's attributes without the annotations a backend adds of its own: Jaeger's query service returns its
   * clock-skew notes as {@code @jaeger@warnings} (its reserved {@code @jaeger@} prefix), which no process sent.
   */
  private static Map<String, Object> spanAttributes(JsonNode kvs) {
    Map<String, Object> out = attributes(kvs);
    out.keySet().removeIf(k -> k.startsWith(JAEGER_ANNOTATION));
    return out;
  }

  /** The prefix of the attributes Jaeger adds to the spans it returns. */
  static final String JAEGER_ANNOTATION = "@jaeger@";

  /** OTLP {@code KeyValue} list to a map of plain values. */
  static Map<String, Object> attributes(JsonNode kvs) {
    Map<String, Object> out = new LinkedHashMap<>();
    if (kvs == null || !kvs.isArray()) {
      return out;
    }
    for (JsonNode kv : kvs) {
      out.put(text(kv, "key"), value(field(kv, "value")));
    }
    return out;
  }

  private static Object value(JsonNode v) {
    if (v == null || v.isNull()) {
      return "";
    }
    JsonNode x;
    if ((x = field(v, "stringValue", "string_value")) != null) {
      return x.asText();
    }
    if ((x = field(v, "intValue", "int_value")) != null) {
      return x.isNumber() ? x.asLong() : Long.parseLong(x.asText());
    }
    if ((x = field(v, "doubleValue", "double_value")) != null) {
      return x.isNumber() ? x.asDouble() : Double.parseDouble(x.asText());
    }
    if ((x = field(v, "boolValue", "bool_value")) != null) {
      return x.asBoolean();
    }
    if ((x = field(v, "arrayValue", "array_value")) != null) {
      List<Object> list = new ArrayList<>();
      JsonNode values = field(x, "values");
      if (values != null) {
        for (JsonNode e : values) {
          list.add(value(e));
        }
      }
      return list;
    }
    if ((x = field(v, "kvlistValue", "kvlist_value")) != null) {
      return attributes(field(x, "values"));
    }
    return v.toString();
  }

  private static JsonNode field(JsonNode n, String... names) {
    for (String name : names) {
      JsonNode x = n.get(name);
      if (x != null) {
        return x;
      }
    }
    return null;
  }

  private static String text(JsonNode n, String name) {
    JsonNode x = n.get(name);
    return x == null || x.isNull() ? "" : x.asText();
  }

  private static String hex(JsonNode n, String... names) {
    JsonNode x = field(n, names);
    String s = x == null ? "" : x.asText().toLowerCase(Locale.ROOT);
    if (!s.isEmpty() && !s.matches("[0-9a-f]+")) {
      throw new IllegalArgumentException(names[0] + " is not hex: '" + s + "'");
    }
    return s;
  }

  private static int integer(JsonNode n, String name) {
    JsonNode x = n.get(name);
    if (x == null) {
      return 0;
    }
    if (x.isTextual()) {
      // tolerate enum names written by some tools
      return switch (x.asText()) {
        case "SPAN_KIND_INTERNAL", "STATUS_CODE_OK" -> 1;
        case "SPAN_KIND_SERVER", "STATUS_CODE_ERROR" -> 2;
        case "SPAN_KIND_CLIENT" -> 3;
        case "SPAN_KIND_PRODUCER" -> 4;
        case "SPAN_KIND_CONSUMER" -> 5;
        default -> x.asInt(0);
      };
    }
    return x.asInt();
  }

  private static long nanos(JsonNode n, String... names) {
    JsonNode x = field(n, names);
    if (x == null) {
      return 0;
    }
    return x.isNumber() ? x.asLong() : Long.parseLong(x.asText());
  }
}
