package dev.ravel.it.support;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A real Jaeger v2 (built by scripts/setup-jaeger.sh) on 127.0.0.1 with in-memory storage: OTLP gRPC and
 * HTTP receivers and the query API, each on a free port. Stopped by its own PID.
 */
public final class JaegerServer implements AutoCloseable {
  private final Process process;
  private final int otlpGrpc;
  private final int otlpHttp;
  private final int query;
  private final Path log;

  private JaegerServer(Process process, int otlpGrpc, int otlpHttp, int query, Path log) {
    this.process = process;
    this.otlpGrpc = otlpGrpc;
    this.otlpHttp = otlpHttp;
    this.query = query;
    this.log = log;
  }

  public static JaegerServer start(Path dir) throws IOException, InterruptedException {
    String bin = System.getenv().getOrDefault("RAVEL_JAEGER_BIN",
        System.getProperty("user.home") + "/.cache/ravel/jaeger-v1.76.0/bin/jaeger");
    if (!Files.isExecutable(Path.of(bin))) {
      throw new IllegalStateException("Jaeger is not built at " + bin + ": run scripts/setup-jaeger.sh");
    }
    int grpc = freePort();
    int http = freePort();
    int queryHttp = freePort();
    int queryGrpc = freePort();
    Path config = dir.resolve("jaeger.yaml");
    Files.writeString(config, String.join("\n",
        "extensions:",
        "  jaeger_storage: {backends: {mem: {memory: {max_traces: 100000}}}}",
        "  jaeger_query: {storage: {traces: mem}, http: {endpoint: 127.0.0.1:" + queryHttp + "},"
            + " grpc: {endpoint: 127.0.0.1:" + queryGrpc + "}}",
        "receivers: {otlp: {protocols: {grpc: {endpoint: 127.0.0.1:" + grpc + "},"
            + " http: {endpoint: 127.0.0.1:" + http + "}}}}",
        "processors: {batch: {timeout: 200ms}}",
        "exporters: {jaeger_storage_exporter: {trace_storage: mem}}",
        "service:",
        "  extensions: [jaeger_storage, jaeger_query]",
        "  pipelines: {traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}}",
        "  telemetry: {metrics: {level: none}}",
        ""));
    Path log = dir.resolve("jaeger.log");
    Process p = new ProcessBuilder(bin, "--config", "file:" + config).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    JaegerServer server = new JaegerServer(p, grpc, http, queryHttp, log);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!(listening(grpc) && listening(http) && listening(queryHttp))) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        server.close();
        throw new IllegalStateException("Jaeger did not start; log: " + log + "\n" + Files.readString(log));
      }
      Thread.sleep(100);
    }
    return server;
  }

  /** {@code http://127.0.0.1:<port>}, the OTLP gRPC receiver. */
  public String otlpGrpcEndpoint() {
    return "http://127.0.0.1:" + otlpGrpc;
  }

  /** {@code http://127.0.0.1:<port>}, the OTLP HTTP receiver (without {@code /v1/traces}). */
  public String otlpHttpEndpoint() {
    return "http://127.0.0.1:" + otlpHttp;
  }

  /** The query service's base URL. */
  public URI queryUrl() {
    return URI.create("http://127.0.0.1:" + query);
  }

  public Path log() {
    return log;
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static boolean listening(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      return s.getLocalPort();
    }
  }
}
