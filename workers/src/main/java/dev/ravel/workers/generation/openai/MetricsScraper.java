package dev.ravel.workers.generation.openai;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;

/**
 * Reads an inference server's {@code GET <base>/metrics} into a {@link ServerMetrics}. It asks for the
 * Prometheus text format 0.0.4 ({@code Accept} header), which vLLM's server (Python's
 * {@code prometheus_client}) and {@code ravel serve} answer; OpenMetrics is not asked for. Thread-safe.
 */
final class MetricsScraper {
  /** The Prometheus text exposition format this scraper parses. */
  static final String ACCEPT = "text/plain; version=0.0.4; charset=utf-8";

  private final HttpClient client;
  private final Duration timeout;

  /**
   * @param client the worker's HTTP client (its connect timeout applies)
   * @param timeout the whole request's limit, response included
   */
  MetricsScraper(HttpClient client, Duration timeout) {
    this.client = Objects.requireNonNull(client, "client");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout: must be positive (got " + timeout + ")");
    }
    this.timeout = timeout;
  }

  /**
   * The metrics URL of a server: {@code <base>/metrics}, where a trailing {@code /} or {@code /v1} of
   * {@code base} (the OpenAI clients' base URL) is left out, as vLLM serves {@code /metrics} beside
   * {@code /v1}.
   */
  static URI metricsUri(URI base) {
    String s = base.toString();
    while (s.endsWith("/")) {
      s = s.substring(0, s.length() - 1);
    }
    if (s.endsWith("/v1")) {
      s = s.substring(0, s.length() - 3);
    }
    return URI.create(s + "/metrics");
  }

  /**
   * Scrapes {@code base}'s metrics.
   *
   * @throws UncheckedIOException when the server cannot be reached, times out, or answers other than 200;
   *     the message names the URL
   * @throws IllegalArgumentException when the body is not Prometheus text (the message names the URL)
   * @throws IllegalStateException when interrupted (the interrupt flag is kept)
   */
  ServerMetrics scrape(URI base) {
    URI uri = metricsUri(base);
    HttpRequest request = HttpRequest.newBuilder(uri).timeout(timeout).header("Accept", ACCEPT).GET().build();
    HttpResponse<String> response;
    try {
      response = client.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getClass().getSimpleName() + ": "
          + e.getMessage();
      throw new UncheckedIOException("cannot scrape " + uri + ": " + why, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while scraping " + uri, e);
    }
    if (response.statusCode() != 200) {
      String body = response.body() == null ? "" : response.body().strip();
      String message = "cannot scrape " + uri + ": HTTP " + response.statusCode()
          + (body.isEmpty() ? "" : " " + (body.length() > 200 ? body.substring(0, 200) + "..." : body));
      throw new UncheckedIOException(message, new IOException(message));
    }
    return ServerMetrics.parse(response.body(), uri.toString());
  }
}
