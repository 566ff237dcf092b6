package dev.ravel.workers.generation.openai;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.telemetry.sdk.SpanRelay;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.resource.v1.Resource;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.GZIPInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The run's own OTLP/HTTP trace receiver for a server the worker launched (vLLM exports its spans over OTLP only):
 * on a loopback port of the worker's node, {@code POST /v1/traces} with an {@code ExportTraceServiceRequest}
 * (protobuf, gzip or not) gets the run's attributes on its resource ({@code rl.run.id},
 * {@code rl.process.role=inference_server}, and {@code service.name} where the server set none), and is written as
 * one line of OTLP JSON into the run folder ({@code traces-inference_server-otlp-<port>.jsonl}, the format of every
 * process's span file) when the run writes span files, and sent on to the run's OTLP backend through the worker's
 * {@link SpanRelay} when the run exports over OTLP. Every span is counted, per exporter as the run's span totals
 * count them ({@link #counts()}): received = written + dropped for the file, = exported + failed + dropped for OTLP.
 */
final class OtlpReceiver implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OtlpReceiver.class);
  /** The exporter name the counts go under, beside each process's own {@code file} and {@code otlp}. */
  static final String EXPORTER = "file";
  private static final long MAX_BODY = 64L << 20;
  private static final JsonFormat.Printer JSON = JsonFormat.printer().omittingInsignificantWhitespace()
      .printingEnumsAsInts();

  private final HttpServer server;
  /** Where the spans are written, or null when the run writes no span files. */
  private final Path file;
  /** Where the spans are sent on, or null when the run exports nothing over OTLP. */
  private final SpanRelay relay;
  private final Map<String, String> resource;
  private final AtomicLong received = new AtomicLong();
  private final AtomicLong written = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong unreadable = new AtomicLong();

  private OtlpReceiver(HttpServer server, Path file, SpanRelay relay, Map<String, String> resource) {
    this.server = server;
    this.file = file;
    this.relay = relay;
    this.resource = Map.copyOf(resource);
  }

  /**
   * Starts a receiver on a free loopback port.
   *
   * @param folder where it writes the spans (the run folder), or null to write none
   * @param relay where it sends them on (closed with the receiver), or null to send them nowhere else
   * @param resource attributes every received resource gets (over the server's own)
   */
  static OtlpReceiver start(Path folder, SpanRelay relay, Map<String, String> resource) {
    if (folder == null && relay == null) {
      throw new IllegalArgumentException("an OTLP receiver needs a folder to write to or a relay to send to");
    }
    try {
      HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      if (folder != null) {
        Files.createDirectories(folder);
      }
      OtlpReceiver r = new OtlpReceiver(s, folder == null ? null : folder.resolve("traces-inference_server-otlp-"
          + s.getAddress().getPort() + ".jsonl"), relay, resource);
      s.createContext("/v1/traces", r::handle);
      s.setExecutor(Executors.newSingleThreadExecutor(t -> {
        Thread th = new Thread(t, "ravel-otlp-receiver");
        th.setDaemon(true);
        return th;
      }));
      s.start();
      return r;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start the run's OTLP receiver for a launched server: " + e.getMessage(), e);
    }
  }

  /** Where a server sends its spans: {@code http://127.0.0.1:<port>/v1/traces}, protocol {@code http/protobuf}. */
  String endpoint() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/traces";
  }

  /** The span file, or null when the run writes none. */
  Path file() {
    return file;
  }

  /**
   * The spans received, as a process's counts: ended = received; the {@code file} exporter's exported = written,
   * dropped; the {@code otlp} exporter's, the relay's (exported, failed, dropped; final once {@link #close} returned).
   */
  ExportStats counts() {
    Map<String, ExportStats.Sent> sent = new java.util.LinkedHashMap<>();
    if (file != null) {
      sent.put(EXPORTER, new ExportStats.Sent(written.get(), 0, dropped.get()));
    }
    if (relay != null) {
      sent.put(ProcessTelemetry.OTLP_EXPORTER, relay.sent());
    }
    return new ExportStats(received.get(), sent);
  }

  /** Requests whose body was not an {@code ExportTraceServiceRequest} (their spans cannot be counted). */
  long unreadableRequests() {
    return unreadable.get();
  }

  private void handle(HttpExchange ex) throws IOException {
    try (ex) {
      if (!"POST".equals(ex.getRequestMethod())) {
        ex.sendResponseHeaders(405, -1);
        return;
      }
      ExportTraceServiceRequest request;
      try (InputStream in = body(ex)) {
        byte[] bytes = in.readNBytes((int) MAX_BODY + 1);
        if (bytes.length > MAX_BODY) {
          throw new InvalidProtocolBufferException("body over " + MAX_BODY + " bytes");
        }
        request = ExportTraceServiceRequest.parseFrom(bytes);
      } catch (IOException e) { // not protobuf, a bad gzip stream, a body cut short
        unreadable.incrementAndGet();
        LOG.warn("OTLP receiver: a request that is not an ExportTraceServiceRequest ({})", e.getMessage());
        ex.sendResponseHeaders(400, -1);
        return;
      }
      long n = request.getResourceSpansList().stream()
          .mapToLong(rs -> rs.getScopeSpansList().stream().mapToLong(ScopeSpans::getSpansCount).sum()).sum();
      received.addAndGet(n);
      ExportTraceServiceRequest ours = withResource(request, resource);
      if (file != null) {
        try {
          write(ours);
          written.addAndGet(n);
        } catch (IOException | RuntimeException e) {
          dropped.addAndGet(n);
          LOG.warn("OTLP receiver: {} spans not written to {}: {}", n, file, e.toString());
        }
      }
      if (relay != null) {
        for (ResourceSpans rs : ours.getResourceSpansList()) {
          relay.offer(ReceivedSpans.of(rs));
        }
      }
      byte[] ok = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
      ex.getResponseHeaders().set("Content-Type", "application/x-protobuf");
      ex.sendResponseHeaders(200, ok.length == 0 ? -1 : ok.length);
      if (ok.length > 0) {
        ex.getResponseBody().write(ok);
      }
    }
  }

  private static InputStream body(HttpExchange ex) throws IOException {
    String encoding = ex.getRequestHeaders().getFirst("Content-Encoding");
    return "gzip".equalsIgnoreCase(encoding) ? new GZIPInputStream(ex.getRequestBody()) : ex.getRequestBody();
  }

  private synchronized void write(ExportTraceServiceRequest request) throws IOException {
    String line = toOtlpJson(request);
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND)) {
      w.write(line);
      w.write('\n');
    }
  }

  /**
   * {@code request} with each resource given {@code resource}'s attributes; {@code service.name} only where the server
   * set none or the SDK's {@code unknown_service} default.
   */
  static ExportTraceServiceRequest withResource(ExportTraceServiceRequest request, Map<String, String> resource) {
    ExportTraceServiceRequest.Builder out = ExportTraceServiceRequest.newBuilder();
    for (ResourceSpans rs : request.getResourceSpansList()) {
      out.addResourceSpans(rs.toBuilder().setResource(withAttributes(rs.getResource(), resource)));
    }
    return out.build();
  }

  /** {@code request} as one line of OTLP JSON (ids in hex, enums as numbers). */
  static String toOtlpJson(ExportTraceServiceRequest request) throws IOException {
    ExportTraceServiceRequest.Builder out = ExportTraceServiceRequest.newBuilder();
    for (ResourceSpans rs : request.getResourceSpansList()) {
      ResourceSpans.Builder b = rs.toBuilder();
      for (int i = 0; i < b.getScopeSpansCount(); i++) {
        ScopeSpans.Builder ss = b.getScopeSpansBuilder(i);
        for (int j = 0; j < ss.getSpansCount(); j++) {
          ss.setSpans(j, hexIds(ss.getSpans(j)));
        }
      }
      out.addResourceSpans(b);
    }
    return JSON.print(out);
  }

  private static Resource withAttributes(Resource r, Map<String, String> attributes) {
    Resource.Builder b = r.toBuilder().clearAttributes();
    for (KeyValue kv : r.getAttributesList()) {
      boolean unknownService = kv.getKey().equals("service.name")
          && kv.getValue().getStringValue().startsWith("unknown_service");
      if (!attributes.containsKey(kv.getKey()) || (kv.getKey().equals("service.name") && !unknownService)) {
        b.addAttributes(kv);
      }
    }
    boolean hasService = b.getAttributesList().stream().anyMatch(kv -> kv.getKey().equals("service.name"));
    attributes.forEach((k, v) -> {
      if (!k.equals("service.name") || !hasService) {
        b.addAttributes(KeyValue.newBuilder().setKey(k).setValue(AnyValue.newBuilder().setStringValue(v)));
      }
    });
    return b.build();
  }

  /**
   * OTLP JSON writes trace and span ids as hex, where protobuf's JSON writes bytes as base64: the ids are replaced by
   * the bytes whose base64 text is their hex text (hex digits are base64 digits, and 32 and 16 are multiples of 4).
   */
  private static Span hexIds(Span s) {
    Span.Builder b = s.toBuilder().setTraceId(hex(s.getTraceId())).setSpanId(hex(s.getSpanId()))
        .setParentSpanId(hex(s.getParentSpanId()));
    for (int i = 0; i < b.getLinksCount(); i++) {
      Span.Link l = b.getLinks(i);
      b.setLinks(i, l.toBuilder().setTraceId(hex(l.getTraceId())).setSpanId(hex(l.getSpanId())));
    }
    return b.build();
  }

  private static ByteString hex(ByteString id) {
    if (id.isEmpty()) {
      return id;
    }
    return ByteString.copyFrom(Base64.getDecoder().decode(HexFormat.of().formatHex(id.toByteArray())));
  }

  /**
   * Stops accepting spans, then sends on what the relay holds (bounded) and closes it; call after the server has
   * stopped (and flushed what it had).
   */
  @Override
  public void close() {
    server.stop(1); // a request being handled finishes (up to 1 s), so its spans are counted whole
    java.util.concurrent.ExecutorService pool = (java.util.concurrent.ExecutorService) server.getExecutor();
    pool.shutdown();
    try {
      if (!pool.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS)) {
        LOG.warn("OTLP receiver: a request still being written after 10 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (relay != null) {
      relay.close(java.time.Duration.ofSeconds(3)); // within the run's stop: the rest counted as dropped
    }
  }
}
