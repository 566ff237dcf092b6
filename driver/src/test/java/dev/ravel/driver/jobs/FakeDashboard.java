package dev.ravel.driver.jobs;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * A stand-in for Ray's dashboard on 127.0.0.1 (an ephemeral port): answers with the shapes Ray 2.39.0 sends,
 * from canned answers per {@code METHOD path}; unknown paths get Ray's 404 text. Refuses websocket upgrades
 * (so clients fall back to polling). Records request bodies.
 */
final class FakeDashboard implements AutoCloseable {
  /** One canned answer: status and body. */
  record Answer(int status, String body) {}

  private final HttpServer server;
  private final Map<String, Function<String, Answer>> routes = new ConcurrentHashMap<>();
  final List<String> requests = Collections.synchronizedList(new ArrayList<>());
  final List<String> bodies = Collections.synchronizedList(new ArrayList<>());

  FakeDashboard() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", this::handle);
    server.start();
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /** Answers {@code method path} with what {@code answer} returns for the request body. */
  FakeDashboard on(String method, String path, Function<String, Answer> answer) {
    routes.put(method + " " + path, answer);
    return this;
  }

  FakeDashboard on(String method, String path, int status, String body) {
    return on(method, path, b -> new Answer(status, body));
  }

  private void handle(HttpExchange ex) throws IOException {
    String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    String key = ex.getRequestMethod() + " " + ex.getRequestURI().getRawPath();
    requests.add(key);
    bodies.add(body);
    Answer a;
    if ("websocket".equalsIgnoreCase(ex.getRequestHeaders().getFirst("Upgrade"))) {
      a = new Answer(501, "no websockets here");
    } else {
      Function<String, Answer> f = routes.get(key);
      a = f != null ? f.apply(body) : new Answer(404, "Job " + lastSegment(key) + " does not exist");
    }
    byte[] out = a.body().getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", a.status() == 200 ? "application/json" : "text/plain");
    ex.sendResponseHeaders(a.status(), out.length == 0 ? -1 : out.length);
    try (OutputStream os = ex.getResponseBody()) {
      os.write(out);
    }
  }

  private static String lastSegment(String key) {
    String[] parts = key.split("/");
    return parts.length == 0 ? "" : parts[parts.length - 1];
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
