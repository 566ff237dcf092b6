package dev.ravel.workers.serve;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * A {@code text/event-stream} response as vLLM's server writes it: {@code data: <json>} events separated
 * by a blank line, ended by {@code data: [DONE]}. Each event is flushed as soon as it is written.
 */
final class EventStream implements AutoCloseable {
  private final HttpExchange ex;
  private final OutputStream out;
  private boolean done;

  private EventStream(HttpExchange ex) {
    this.ex = ex;
    this.out = ex.getResponseBody();
  }

  /** Sends the 200 headers of a chunked event stream. */
  static EventStream open(HttpExchange ex) throws IOException {
    ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    ex.getResponseHeaders().set("Cache-Control", "no-cache");
    ex.sendResponseHeaders(200, 0);
    return new EventStream(ex);
  }

  void data(Object json) throws IOException {
    write(Responses.JSON.writeValueAsString(json));
  }

  /** The terminating {@code data: [DONE]} event. */
  void done() throws IOException {
    if (!done) {
      done = true;
      write("[DONE]");
    }
  }

  private void write(String payload) throws IOException {
    out.write(("data: " + payload + "\n\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  @Override
  public void close() throws IOException {
    try {
      out.close();
    } finally {
      ex.close();
    }
  }
}
