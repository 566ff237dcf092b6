package dev.ravel.workers.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/** Writes whole responses: JSON bodies, plain text, empty bodies and vLLM-shaped errors. */
final class Responses {
  static final ObjectMapper JSON = new ObjectMapper();

  private Responses() {}

  static void json(HttpExchange ex, int status, Object body) throws IOException {
    send(ex, status, "application/json", JSON.writeValueAsBytes(body));
  }

  static void text(HttpExchange ex, int status, String body) throws IOException {
    send(ex, status, "text/plain; charset=utf-8", body.getBytes(StandardCharsets.UTF_8));
  }

  static void empty(HttpExchange ex, int status) throws IOException {
    ex.sendResponseHeaders(status, -1);
    ex.close();
  }

  static void error(HttpExchange ex, ApiError e) throws IOException {
    json(ex, e.status(), errorBody(e));
  }

  /** {@code {"error":{"message","type","param","code"}}}, vLLM's {@code ErrorResponse}. */
  static ObjectNode errorBody(ApiError e) {
    ObjectNode root = JSON.createObjectNode();
    ObjectNode err = root.putObject("error");
    err.put("message", e.getMessage());
    err.put("type", e.type());
    err.put("param", e.param());
    err.put("code", e.status());
    return root;
  }

  static void send(HttpExchange ex, int status, String contentType, byte[] body) throws IOException {
    ex.getResponseHeaders().set("Content-Type", contentType);
    ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
    if (body.length > 0) {
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    }
    ex.close();
  }
}
