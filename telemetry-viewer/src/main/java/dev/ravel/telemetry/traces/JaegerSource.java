package dev.ravel.telemetry.traces;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Reads a run's spans back from Jaeger v2's query API ({@code GET /api/v3/traces}): traces of the
 * service in the time window, searched by the {@code rl.run.id} attribute and kept only where a span's
 * resource carries that run id (Jaeger v1.76's memory store was seen to ignore the attribute filter). The answer is OTLP JSON ({@code {"result":{"resourceSpans":[...]}}}, possibly
 * several such objects in a row), read with the same rules as the JSON Lines files.
 */
public final class JaegerSource {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final URI base;
  private final HttpClient http;
  private final Duration timeout;

  private JaegerSource(URI base, Duration timeout) {
    this.base = base;
    this.timeout = timeout;
    this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
  }

  /** A source for the Jaeger query service at {@code base} (for example {@code http://127.0.0.1:16686}). */
  public static JaegerSource of(URI base, Duration timeout) {
    return new JaegerSource(Objects.requireNonNull(base, "base"), Objects.requireNonNull(timeout, "timeout"));
  }

  /**
   * The spans of run {@code runId} from the services named (each searched: a run's engines may report
   * under their own service name), started between {@code from} and {@code to}.
   *
   * @throws TraceSourceException if Jaeger cannot be reached or answers with an error
   */
  public List<SpanRecord> runSpans(String runId, List<String> services, Instant from, Instant to) {
    Map<String, SpanRecord> unique = new LinkedHashMap<>();
    for (String service : services) {
      for (SpanRecord s : query(runId, service, from, to)) {
        // the run id is matched here as well: the pinned Jaeger's memory store ignores query.attributes
        if (s.runId().equals(runId)) {
          unique.putIfAbsent(s.traceId() + s.spanId(), s);
        }
      }
    }
    return new ArrayList<>(unique.values());
  }

  private List<SpanRecord> query(String runId, String service, Instant from, Instant to) {
    String attrs = "{\"rl.run.id\":\"" + runId.replace("\"", "") + "\"}";
    String q = "query.service_name=" + enc(service)
        + "&query.start_time_min=" + enc(from.toString())
        + "&query.start_time_max=" + enc(to.toString())
        + "&query.attributes=" + enc(attrs)
        + "&query.num_traces=1000&query.search_depth=1000"; // num_traces: the name the pinned Jaeger reads; search_depth: later releases
    URI uri = base.resolve("/api/v3/traces?" + q);
    HttpResponse<String> r;
    try {
      r = http.send(HttpRequest.newBuilder(uri).timeout(timeout).GET().build(), HttpResponse.BodyHandlers.ofString());
    } catch (ConnectException e) {
      throw new TraceSourceException("Jaeger is not reachable at " + base + " (connection refused)");
    } catch (HttpTimeoutException e) {
      throw new TraceSourceException("Jaeger at " + base + " did not answer within " + timeout.toSeconds() + " s");
    } catch (IOException e) {
      throw new TraceSourceException("Jaeger at " + base + " could not be queried: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TraceSourceException("interrupted while querying Jaeger at " + base);
    }
    if (r.statusCode() == 404) {
      return List.of(); // Jaeger answers 404 when no trace matches
    }
    if (r.statusCode() != 200) {
      throw new TraceSourceException("Jaeger at " + base + " answered HTTP " + r.statusCode() + ": "
          + r.body().lines().findFirst().orElse(""));
    }
    List<SpanRecord> out = new ArrayList<>();
    try (MappingIterator<JsonNode> it = JSON.readerFor(JsonNode.class).readValues(r.body())) {
      while (it.hasNext()) {
        JsonNode node = it.next();
        if (node.has("error")) {
          JsonNode err = node.get("error");
          if (err.path("httpCode").asInt() == 404 || err.path("code").asInt() == 5) {
            continue;
          }
          throw new TraceSourceException("Jaeger at " + base + " reported: " + err.path("message").asText(err.toString()));
        }
        JsonNode result = node.has("result") ? node.get("result") : node;
        if (result.has("resourceSpans")) {
          out.addAll(OtlpJson.spans(result, "jaeger"));
        }
      }
    } catch (IOException e) {
      throw new TraceSourceException("Jaeger at " + base + " sent an unreadable answer: " + e.getMessage());
    }
    return out;
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }
}
