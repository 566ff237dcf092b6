package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MetricsScraperTest {
  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final MetricsScraper scraper = new MetricsScraper(client, Duration.ofSeconds(5));
  private HttpServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  private URI serve(int status, String contentType, String body, AtomicReference<String> accept)
      throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      try (exchange) {
        if (!exchange.getRequestURI().getPath().equals("/metrics")) {
          exchange.sendResponseHeaders(404, -1);
          return;
        }
        if (accept != null) {
          accept.set(exchange.getRequestHeaders().getFirst("Accept"));
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", contentType);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(bytes);
        }
      }
    });
    server.start();
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  @Test
  void scrape_vllmServer_parsesItsMetrics() throws IOException {
    AtomicReference<String> accept = new AtomicReference<>();
    URI base = serve(200, "text/plain; version=0.0.4; charset=utf-8", Fixtures.text(Fixtures.VLLM), accept);

    ServerMetrics m = scraper.scrape(base);

    assertThat(m.source()).isEqualTo(base + "/metrics");
    assertThat(m.preemptions()).isEqualTo(7);
    assertThat(m.finishedTotal()).isEqualTo(24);
    assertThat(accept.get()).isEqualTo(MetricsScraper.ACCEPT);
  }

  @Test
  void scrape_openAiBaseUrl_findsMetricsBesideV1() throws IOException {
    URI base = serve(200, "text/plain", Fixtures.text(Fixtures.RAVEL_SERVE), null);

    ServerMetrics m = scraper.scrape(URI.create(base + "/v1/"));

    assertThat(m.preemptions()).isEqualTo(5);
  }

  @Test
  void scrape_closedPort_throwsNamingTheUrl() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    URI base = URI.create("http://127.0.0.1:" + port);

    assertThatThrownBy(() -> scraper.scrape(base))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("cannot scrape http://127.0.0.1:" + port + "/metrics");
  }

  @Test
  void scrape_errorStatus_throwsNamingUrlAndStatus() throws IOException {
    URI base = serve(503, "text/plain", "engine is starting", null);

    assertThatThrownBy(() -> scraper.scrape(base))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining(base + "/metrics")
        .hasMessageContaining("HTTP 503")
        .hasMessageContaining("engine is starting");
  }

  @Test
  void scrape_htmlBody_throwsNamingTheUrl() throws IOException {
    URI base = serve(200, "text/html", "<html><body>proxy login</body></html>", null);

    assertThatThrownBy(() -> scraper.scrape(base))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(base + "/metrics");
  }

  @Test
  void scrape_slowServer_timesOutNamingTheUrl() throws IOException {
    // the stand-in ends the exchange only after the scraper has given up, however slowly either side runs
    // (the 60 s bound is a hang guard that frees the server's thread)
    CountDownLatch gaveUp = new CountDownLatch(1);
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      try (exchange) {
        gaveUp.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    server.start();
    URI base = URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    MetricsScraper quick = new MetricsScraper(client, Duration.ofMillis(200));

    try {
      assertThatThrownBy(() -> quick.scrape(base))
          .isInstanceOf(UncheckedIOException.class)
          .hasMessageContaining(base + "/metrics")
          .hasMessageContaining("HttpTimeoutException");
    } finally {
      gaveUp.countDown();
    }
  }

  @Test
  void metricsUri_baseUrls_pointAtRootMetrics() {
    assertThat(MetricsScraper.metricsUri(URI.create("http://h:8000"))).hasToString("http://h:8000/metrics");
    assertThat(MetricsScraper.metricsUri(URI.create("http://h:8000/"))).hasToString("http://h:8000/metrics");
    assertThat(MetricsScraper.metricsUri(URI.create("http://h:8000/v1"))).hasToString("http://h:8000/metrics");
    assertThat(MetricsScraper.metricsUri(URI.create("http://h/p/v1/"))).hasToString("http://h/p/metrics");
  }

  @Test
  void constructor_nonPositiveTimeout_isRejected() {
    assertThatThrownBy(() -> new MetricsScraper(client, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("timeout");
  }
}
