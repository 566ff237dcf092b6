package dev.ravel.driver.trackers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The MLflow tracker's error answers and credentials, against an HTTP server on loopback that refuses it. */
final class MlflowSinkHttpTest {
  private HttpServer server;
  private final List<String> authorization = Collections.synchronizedList(new ArrayList<>());

  @BeforeEach
  void aServerThatRefuses() throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/api/2.0/mlflow/", exchange -> {
      authorization.add(exchange.getRequestHeaders().getFirst("Authorization"));
      byte[] body = "{\"error_code\": \"PERMISSION_DENIED\", \"message\": \"no write access\"}"
          .getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(403, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  @Test
  void start_refusedByTheServer_failsWithItsStatusAndErrorCodeNeverTheToken() {
    String uri = "http://127.0.0.1:" + server.getAddress().getPort();
    MlflowSink sink = MlflowSink.create(Map.of("MLFLOW_TRACKING_URI", uri, "MLFLOW_TRACKING_TOKEN", "t0k3n-s3cr3t"),
        "r1", "abc", Map.of("grpo.steps", 3));

    Throwable e = catchThrowable(sink::start);

    assertThat(e).isInstanceOf(MlflowSink.MlflowException.class)
        .hasMessage("HTTP 403 from " + uri + " (experiments/get-by-name) PERMISSION_DENIED: no write access");
    assertThat(authorization).containsExactly("Bearer t0k3n-s3cr3t");
    assertThat(sink.details().toString()).doesNotContain("t0k3n");
  }

  @Test
  void worker_aRefusingServer_failsNoStepAndWarnsOnceWithoutTheToken() {
    String uri = "http://127.0.0.1:" + server.getAddress().getPort();
    List<String> warnings = Collections.synchronizedList(new ArrayList<>());
    Trackers t = Trackers.start(List.of(MlflowSink.create(Map.of("MLFLOW_TRACKING_URI", uri,
        "MLFLOW_TRACKING_TOKEN", "t0k3n-s3cr3t"), "r1", "abc", Map.of())), warnings::add);

    t.step(Steps.plain(1));
    t.step(Steps.plain(2));
    t.close("succeeded");

    assertThat(t.summary()).isEqualTo("trackers: mlflow 0/2 steps sent (2 failed, 0 dropped)");
    assertThat(warnings).singleElement().asString().startsWith("tracker mlflow failed: HTTP 403 from " + uri)
        .doesNotContain("t0k3n");
    assertThat(t.json().toString()).doesNotContain("t0k3n");
  }
}
