package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code ravel serve --record-exchanges FILE}: every exchange as one JSON line {@code {"seq", "arrived_by_end",
 * "method", "path", "query", "headers", "body", "status", "response"}} (headers: only {@code content-type},
 * {@code x-request-id}, {@code traceparent}, {@code tracestate}; bodies as text), in the order the exchanges end;
 * {@code seq} numbers them in the order they arrived (from 1), which a check of the order of calls reads: a client's
 * next call may end before the line of the call it waited for is written. {@code arrived_by_end} is how many
 * exchanges had arrived when this one's line was written (so at least {@code seq}): a call that arrived later
 * cannot have changed what this one answered, while one that arrived earlier may have (a weight update that a
 * completion held by {@code pause?mode=keep} went on under). A contract check
 * replays the requests through vLLM's own app and renders the answers through vLLM's own code. Nothing secret
 * passes here (no authorization header is kept). A write that fails is logged once and recording stops.
 */
final class ExchangeLog {
  private static final Logger LOG = LoggerFactory.getLogger(ExchangeLog.class);
  private static final List<String> HEADERS = List.of("content-type", "x-request-id", "traceparent", "tracestate");

  private final Path file;
  private final java.util.concurrent.atomic.AtomicLong arrivals = new java.util.concurrent.atomic.AtomicLong();
  private volatile boolean failed;

  ExchangeLog(Path file) {
    this.file = file;
  }

  /** What one exchange read and wrote. */
  static final class Capture {
    final long seq;
    final byte[] request;
    final ByteArrayOutputStream response = new ByteArrayOutputStream();

    Capture(long seq, byte[] request) {
      this.seq = seq;
      this.request = request;
    }
  }

  /** Reads the request body (handing the handler a copy) and tees the response body. */
  Capture capture(HttpExchange ex) throws IOException {
    long seq = arrivals.incrementAndGet(); // before the body is read: the order requests came in
    Capture c = new Capture(seq, ex.getRequestBody().readAllBytes());
    OutputStream out = ex.getResponseBody();
    ex.setStreams(new ByteArrayInputStream(c.request), new FilterOutputStream(out) {
      @Override
      public void write(int b) throws IOException {
        out.write(b);
        c.response.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
        c.response.write(b, off, len);
      }
    });
    return c;
  }

  synchronized void write(HttpExchange ex, Capture c) {
    if (failed) {
      return;
    }
    ObjectNode line = Responses.JSON.createObjectNode();
    line.put("seq", c.seq);
    line.put("arrived_by_end", arrivals.get());
    line.put("method", ex.getRequestMethod());
    line.put("path", ex.getRequestURI().getPath());
    String q = ex.getRequestURI().getRawQuery();
    line.put("query", q == null ? "" : q);
    ObjectNode headers = line.putObject("headers");
    for (String h : HEADERS) {
      String v = ex.getRequestHeaders().getFirst(h);
      if (v != null) {
        headers.put(h, v);
      }
    }
    line.put("body", new String(c.request, StandardCharsets.UTF_8));
    line.put("status", ex.getResponseCode());
    line.put("response", c.response.toString(StandardCharsets.UTF_8));
    try {
      Files.write(file, (Responses.JSON.writeValueAsString(line) + "\n").getBytes(StandardCharsets.UTF_8),
          StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
    } catch (IOException e) {
      failed = true;
      LOG.warn("recording exchanges to {} stopped: {}", file, e.toString());
    }
  }
}
