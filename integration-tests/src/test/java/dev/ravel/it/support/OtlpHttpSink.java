package dev.ravel.it.support;

import com.sun.net.httpserver.HttpExchange;
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
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;

/**
 * An OTLP/HTTP traces receiver on 127.0.0.1 that decodes each protobuf {@code ExportTraceServiceRequest}
 * and keeps its spans, and each {@code ExportMetricsServiceRequest}'s metric names: where a test needs to see
 * exactly which process exported what, to which endpoint.
 *
 * <p>What it keeps is what its clients were told it took: a request's spans (metrics) are visible as soon as
 * they are decoded, and taken back if its response could not be sent whole (the client sees a failure then).
 * {@link #close()} is the backend going down without cutting a request in half: it stops taking requests (one
 * arriving from then on loses its connection, unanswered, like one to a dead server, and is not kept), waits
 * for the requests being handled to be answered, then closes the listening socket and every connection. So
 * once {@code close()} returned, {@link #spans()} is exactly the spans of the requests answered 200.
 */
public final class OtlpHttpSink implements AutoCloseable {
  /** How long {@link #close()} waits for the requests being handled (each normally takes milliseconds). */
  private static final long DRAIN_SECONDS = 60;

  private final HttpServer server;
  private final String scheme;
  private final AtomicInteger requests = new AtomicInteger();
  /** One entry per request whose spans are kept, so that a request not answered is taken back whole. */
  private final List<List<Received>> spanBatches = new CopyOnWriteArrayList<>();
  private final List<List<ReceivedMetric>> metricBatches = new CopyOnWriteArrayList<>();
  private final List<String> authorizations = new CopyOnWriteArrayList<>();
  private final Object lock = new Object();
  /** Guarded by {@link #lock}: whether requests are still taken, and how many are being handled. */
  private boolean accepting = true;
  private int inFlight;
  private boolean closed;

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
      boolean take;
      synchronized (lock) {
        take = accepting;
        if (take) {
          inFlight++;
        }
      }
      if (!take) {
        // the backend is down: no answer, the connection is dropped (closing an exchange that sent no
        // response headers closes its connection), nothing kept
        exchange.close();
        return;
      }
      try {
        serve(exchange);
      } finally {
        synchronized (lock) {
          inFlight--;
          lock.notifyAll();
        }
      }
    });
    server.start();
  }

  private void serve(HttpExchange exchange) {
    try {
      requests.incrementAndGet();
      String auth = exchange.getRequestHeaders().getFirst("Authorization");
      authorizations.add(auth == null ? "" : auth);
      String path = exchange.getRequestURI().getPath();
      byte[] request;
      try (InputStream in = exchange.getRequestBody()) {
        request = in.readAllBytes();
      } catch (IOException | RuntimeException e) {
        respond(exchange, 400, null);
        return;
      }
      if (path.endsWith("/v1/metrics")) {
        List<ReceivedMetric> batch = new ArrayList<>();
        try {
          ExportMetricsServiceRequest req = ExportMetricsServiceRequest.parseFrom(request);
          for (ResourceMetrics rm : req.getResourceMetricsList()) {
            Map<String, String> resource = attrs(rm.getResource().getAttributesList());
            for (ScopeMetrics sm : rm.getScopeMetricsList()) {
              for (Metric m : sm.getMetricsList()) {
                batch.add(new ReceivedMetric(path, resource, m.getName()));
              }
            }
          }
        } catch (IOException | RuntimeException e) {
          respond(exchange, 400, null);
          return;
        }
        List<ReceivedMetric> kept = List.copyOf(batch);
        metricBatches.add(kept);
        if (!respond(exchange, 200, null)) {
          metricBatches.remove(kept); // the client was not told: not received
        }
        return;
      }
      if (!path.endsWith("/v1/traces")) {
        respond(exchange, 404, null);
        return;
      }
      List<Received> batch = new ArrayList<>();
      try {
        ExportTraceServiceRequest req = ExportTraceServiceRequest.parseFrom(request);
        for (ResourceSpans rs : req.getResourceSpansList()) {
          String role = attr(rs.getResource().getAttributesList(), "rl.process.role");
          String service = attr(rs.getResource().getAttributesList(), "service.name");
          Map<String, String> resource = attrs(rs.getResource().getAttributesList());
          for (ScopeSpans ss : rs.getScopeSpansList()) {
            for (Span s : ss.getSpansList()) {
              batch.add(new Received(path, service, role, s.getName(),
                  HexFormat.of().formatHex(s.getTraceId().toByteArray()),
                  HexFormat.of().formatHex(s.getSpanId().toByteArray()),
                  HexFormat.of().formatHex(s.getParentSpanId().toByteArray()), resource));
            }
          }
        }
      } catch (IOException | RuntimeException e) {
        respond(exchange, 400, null);
        return;
      }
      List<Received> kept = List.copyOf(batch);
      spanBatches.add(kept);
      if (!respond(exchange, 200, ExportTraceServiceResponse.getDefaultInstance().toByteArray())) {
        spanBatches.remove(kept); // the client was not told: not received
      }
    } finally {
      exchange.close();
    }
  }

  /**
   * Sends a response ({@code body} null: none), protobuf-typed when it has a body; true when all of it was
   * written to the connection.
   */
  private static boolean respond(HttpExchange exchange, int status, byte[] body) {
    try {
      if (body != null) {
        exchange.getResponseHeaders().add("Content-Type", "application/x-protobuf");
      }
      exchange.sendResponseHeaders(status, body == null ? -1 : body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        if (body != null) {
          out.write(body);
        }
      } // closing the fixed-length stream flushes it to the connection, and throws if that fails
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
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

  /** The spans of every request answered 200 (or, before {@link #close()}, being answered). */
  public List<Received> spans() {
    return spanBatches.stream().flatMap(List::stream).toList();
  }

  /** Each metric of each OTLP metrics request received, with the request's path and resource. */
  public List<ReceivedMetric> metrics() {
    return metricBatches.stream().flatMap(List::stream).toList();
  }

  /**
   * The backend goes down: from now on a request loses its connection unanswered and is not kept; the
   * requests being handled are answered first (up to 60 s, else this throws once the
   * server is stopped, as the sink can then not vouch for what it received), then the listening socket and
   * every connection are closed. Afterwards {@link #spans()} and {@link #metrics()} no longer change.
   * Closing again does nothing.
   */
  @Override
  public void close() {
    int stuck;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      accepting = false;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DRAIN_SECONDS);
      boolean interrupted = false;
      while (inFlight > 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(lock, left);
        } catch (InterruptedException e) {
          interrupted = true;
          break;
        }
      }
      stuck = inFlight;
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    server.stop(0);
    if (stuck > 0) {
      throw new IllegalStateException(stuck + " OTLP request(s) still being handled " + DRAIN_SECONDS
          + " s after the sink stopped taking requests: what it received is not final");
    }
  }

  /** A received span. */
  public record Received(String path, String service, String role, String name, String traceId, String spanId,
      String parentSpanId, Map<String, String> resource) {}

  /** A received metric (its points are not kept). */
  public record ReceivedMetric(String path, Map<String, String> resource, String name) {}
}
