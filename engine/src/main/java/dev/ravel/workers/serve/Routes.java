package dev.ravel.workers.serve;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Binds handlers to exact paths and methods on a JDK {@link HttpServer}: another path is a 404, another
 * method a 405 (with {@code Allow}); an {@link ApiError} becomes vLLM's error body, any other exception a
 * 500 naming it. A response already under way (a stream) is ended instead. Counts the exchanges in
 * progress, and once {@link #closing()} answers new ones 503, so that a server can drain before it stops.
 */
final class Routes {
  private static final Logger LOG = LoggerFactory.getLogger(Routes.class);

  /** Serves one exchange; may throw {@link ApiError}. */
  interface Handler {
    void handle(HttpExchange ex) throws IOException;
  }

  private final HttpServer server;
  private final ExchangeLog log;
  private final Object lock = new Object();
  private int inFlight;
  private volatile boolean closing;

  Routes(HttpServer server) {
    this(server, null);
  }

  /** As above, recording every exchange to {@code recordTo} as a JSON line when it is not null. */
  Routes(HttpServer server, java.nio.file.Path recordTo) {
    this.server = server;
    this.log = recordTo == null ? null : new ExchangeLog(recordTo);
    server.createContext("/", ex -> serve(ex, null, null, null));
  }

  /** From now on, requests are answered 503. */
  void closing() {
    closing = true;
  }

  /** Whether {@link #closing()} was called. */
  boolean isClosing() {
    return closing;
  }

  /** Waits until no exchange is in progress, at most {@code millis}; false on timeout. */
  boolean awaitIdle(long millis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + millis;
    synchronized (lock) {
      while (inFlight > 0) {
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) {
          return false;
        }
        lock.wait(left);
      }
      return true;
    }
  }

  Routes get(String path, Handler h) {
    server.createContext(path, ex -> serve(ex, path, "GET", h));
    return this;
  }

  Routes post(String path, Handler h) {
    server.createContext(path, ex -> serve(ex, path, "POST", h));
    return this;
  }

  private void serve(HttpExchange ex, String path, String method, Handler h) {
    synchronized (lock) {
      inFlight++;
    }
    ExchangeLog.Capture capture = null;
    try {
      if (log != null) {
        capture = log.capture(ex);
      }
      if (closing) {
        throw ApiError.unavailable("the server is shutting down");
      }
      String requested = ex.getRequestURI().getPath();
      if (path == null || !path.equals(requested)) {
        throw ApiError.notFound("Not Found: no route " + requested);
      }
      if (!method.equals(ex.getRequestMethod())) {
        ex.getResponseHeaders().set("Allow", method);
        throw ApiError.methodNotAllowed(ex.getRequestMethod(), path, method);
      }
      h.handle(ex);
    } catch (ApiError e) {
      fail(ex, e);
    } catch (IOException e) {
      LOG.debug("{} {}: client connection failed: {}", ex.getRequestMethod(), ex.getRequestURI(), e.toString());
    } catch (RuntimeException e) {
      LOG.warn("{} {} failed", ex.getRequestMethod(), ex.getRequestURI(), e);
      fail(ex, ApiError.internal("internal error: " + e));
    } finally {
      ex.close();
      if (capture != null) {
        log.write(ex, capture);
      }
      synchronized (lock) {
        inFlight--;
        lock.notifyAll();
      }
    }
  }

  private static void fail(HttpExchange ex, ApiError e) {
    if (ex.getResponseCode() != -1) {
      LOG.debug("{} {}: failed after the response started: {}", ex.getRequestMethod(), ex.getRequestURI(),
          e.getMessage());
      return;
    }
    try {
      Responses.error(ex, e);
    } catch (IOException io) {
      LOG.debug("{} {}: could not send the error: {}", ex.getRequestMethod(), ex.getRequestURI(), io.toString());
    }
  }
}
