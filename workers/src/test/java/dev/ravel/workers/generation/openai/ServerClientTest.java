package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.opentelemetry.api.OpenTelemetry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The admin calls over a connection the server closed before answering, on a real loopback socket: the keep-alive
 * race (a server closes an idle kept connection as the next request goes out on it).
 */
@Timeout(60)
final class ServerClientTest {
  private static final byte[] OK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"
      .getBytes(StandardCharsets.US_ASCII);

  private static String head(InputStream in) throws IOException {
    StringBuilder b = new StringBuilder();
    for (int c = in.read(); c >= 0; c = in.read()) {
      b.append((char) c);
      if (b.toString().endsWith("\r\n\r\n")) {
        return b.substring(0, b.indexOf("\r\n"));
      }
    }
    return b.toString();
  }

  private static ServerClient client(ServerSocket server) {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    return new ServerClient("http://127.0.0.1:" + server.getLocalPort(), http, Runnable::run, 1, Duration.ofSeconds(30),
        OpenTelemetry.noop().getTracer("test"), System::nanoTime);
  }

  @Test
  void pause_keptConnectionClosedAsTheRequestWentOut_isSentAgainOnANewConnectionAndAnswered() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    try (ServerSocket server = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
      Thread t = new Thread(() -> {
        try (Socket kept = server.accept()) {
          InputStream in = kept.getInputStream();
          OutputStream out = kept.getOutputStream();
          seen.add("1: " + head(in));
          out.write(OK); // kept alive: the client pools the connection
          out.flush();
          seen.add("1: " + head(in)); // the next request arrives on it, and the connection is closed unanswered
        } catch (IOException e) {
          seen.add("server: " + e);
        }
        try (Socket fresh = server.accept()) {
          seen.add("2: " + head(fresh.getInputStream()));
          fresh.getOutputStream().write(OK);
        } catch (IOException e) {
          seen.add("server: " + e);
        }
      });
      t.start();
      ServerClient c = client(server);
      c.resume();
      c.pause("wait"); // met the close: sent again on a new connection

      t.join(30_000);
      assertThat(seen).containsExactly("1: POST /resume HTTP/1.1", "1: POST /pause?mode=wait&clear_cache=false HTTP/1.1",
          "2: POST /pause?mode=wait&clear_cache=false HTTP/1.1");
    }
  }

  @Test
  void pause_serverGoneAfterClosingUnanswered_failsNamingTheCallAndWhy() throws Exception {
    ServerSocket server = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
    Thread t = new Thread(() -> {
      try {
        Socket s = server.accept();
        head(s.getInputStream());
        // nothing listens any more before the connection is closed unanswered: the second send is refused
        server.close();
        s.close();
      } catch (IOException e) {
        // the test's assertion tells
      }
    });
    t.start();
    ServerClient c = client(server);
    assertThatThrownBy(() -> c.pause("wait")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("POST http://127.0.0.1:" + server.getLocalPort() + "/pause?mode=wait")
        .hasMessageContaining("connection refused");
    t.join(30_000);
  }

  @Test
  void closedBeforeAnswer_isTheClientsMessageNotAnyIoError() {
    assertThat(ServerClient.closedBeforeAnswer(new IOException("HTTP/1.1 header parser received no bytes",
        new java.io.EOFException("EOF reached while reading")))).isTrue();
    assertThat(ServerClient.closedBeforeAnswer(new java.net.ConnectException("Connection refused"))).isFalse();
    assertThat(ServerClient.closedBeforeAnswer(new java.net.http.HttpTimeoutException("request timed out"))).isFalse();
  }
}
