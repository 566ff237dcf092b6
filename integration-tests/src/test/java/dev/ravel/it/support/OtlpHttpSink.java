package dev.ravel.it.support;

import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import io.opentelemetry.proto.metrics.v1.ScopeMetrics;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;

/**
 * An OTLP/HTTP traces receiver on 127.0.0.1 that decodes each protobuf {@code ExportTraceServiceRequest}
 * and keeps its spans, and each {@code ExportMetricsServiceRequest}'s metric names: where a test needs to see
 * exactly which process exported what, to which endpoint.
 */
public final class OtlpHttpSink implements AutoCloseable {
  private final HttpServer server;
  private final String scheme;
  private final AtomicInteger requests = new AtomicInteger();
  private final List<Received> spans = new CopyOnWriteArrayList<>();
  private final List<ReceivedMetric> metrics = new CopyOnWriteArrayList<>();
  private final List<String> authorizations = new CopyOnWriteArrayList<>();

  public OtlpHttpSink() throws IOException {
    this(HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0), "http");
  }

  /** A receiver over TLS with the key and certificate of {@code tls}. */
  public static OtlpHttpSink tls(SSLContext tls) throws IOException {
    HttpsServer server = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setHttpsConfigurator(new HttpsConfigurator(tls));
    return new OtlpHttpSink(server, "https");
  }

  private OtlpHttpSink(HttpServer server, String scheme) {
    this.server = server;
    this.scheme = scheme;
    server.createContext("/", exchange -> {
      requests.incrementAndGet();
      String auth = exchange.getRequestHeaders().getFirst("Authorization");
      authorizations.add(auth == null ? "" : auth);
      if (exchange.getRequestURI().getPath().endsWith("/v1/metrics")) {
        try (InputStream in = exchange.getRequestBody()) {
          ExportMetricsServiceRequest req = ExportMetricsServiceRequest.parseFrom(in.readAllBytes());
          for (ResourceMetrics rm : req.getResourceMetricsList()) {
            Map<String, String> resource = attrs(rm.getResource().getAttributesList());
            for (ScopeMetrics sm : rm.getScopeMetricsList()) {
              for (Metric m : sm.getMetricsList()) {
                metrics.add(new ReceivedMetric(exchange.getRequestURI().getPath(), resource, m.getName()));
              }
            }
          }
          exchange.sendResponseHeaders(200, -1);
        } catch (IOException | RuntimeException e) {
          exchange.sendResponseHeaders(400, -1);
        } finally {
          exchange.close();
        }
        return;
      }
      if (!exchange.getRequestURI().getPath().endsWith("/v1/traces")) {
        exchange.getRequestBody().readAllBytes();
        exchange.sendResponseHeaders(404, -1);
        exchange.close();
        return;
      }
      try (InputStream in = exchange.getRequestBody()) {
        ExportTraceServiceRequest req = ExportTraceServiceRequest.parseFrom(in.readAllBytes());
        for (ResourceSpans rs : req.getResourceSpansList()) {
          String role = attr(rs.getResource().getAttributesList(), "rl.process.role");
          String service = attr(rs.getResource().getAttributesList(), "service.name");
          Map<String, String> resource = attrs(rs.getResource().getAttributesList());
          for (ScopeSpans ss : rs.getScopeSpansList()) {
            for (Span s : ss.getSpansList()) {
              spans.add(new Received(exchange.getRequestURI().getPath(), service, role, s.getName(),
                  HexFormat.of().formatHex(s.getTraceId().toByteArray()),
                  HexFormat.of().formatHex(s.getSpanId().toByteArray()),
                  HexFormat.of().formatHex(s.getParentSpanId().toByteArray()), resource));
            }
          }
        }
        byte[] body = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
        exchange.getResponseHeaders().add("Content-Type", "application/x-protobuf");
        exchange.sendResponseHeaders(200, body.length);
        exchange.getResponseBody().write(body);
      } catch (IOException | RuntimeException e) {
        exchange.sendResponseHeaders(400, -1);
      } finally {
        exchange.close();
      }
    });
    server.start();
  }

  private static String attr(List<KeyValue> kvs, String key) {
    return kvs.stream().filter(kv -> kv.getKey().equals(key)).map(kv -> kv.getValue().getStringValue())
        .findFirst().orElse("");
  }

  private static Map<String, String> attrs(List<KeyValue> kvs) {
    Map<String, String> out = new LinkedHashMap<>();
    for (KeyValue kv : kvs) {
      var v = kv.getValue();
      out.put(kv.getKey(), v.hasStringValue() ? v.getStringValue() : v.hasIntValue() ? Long.toString(v.getIntValue())
          : v.toString().trim());
    }
    return out;
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** {@code http://127.0.0.1:<port>} ({@code https} for a TLS receiver) */
  public String baseUrl() {
    return scheme + "://127.0.0.1:" + port();
  }

  /** The {@code Authorization} header of each request received ("" when absent). */
  public List<String> authorizations() {
    return List.copyOf(authorizations);
  }

  public int requests() {
    return requests.get();
  }

  public List<Received> spans() {
    return List.copyOf(spans);
  }

  /** Each metric of each OTLP metrics request received, with the request's path and resource. */
  public List<ReceivedMetric> metrics() {
    return List.copyOf(metrics);
  }

  @Override
  public void close() {
    server.stop(0);
  }

  /** A received span. */
  public record Received(String path, String service, String role, String name, String traceId, String spanId,
      String parentSpanId, Map<String, String> resource) {}

  /** A received metric (its points are not kept). */
  public record ReceivedMetric(String path, Map<String, String> resource, String name) {}
}
