package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.WeightsFile;
import io.opentelemetry.api.OpenTelemetry;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real child processes: {@code ravel serve} (ServeMain on this classpath) launched as a worker launches it. */
class LaunchedServerTest {
  private static final ModelWeights WEIGHTS =
      ModelWeights.init(ModelSpec.tiny(CharTokenizer.arithmetic().vocabSize()), 3);

  @TempDir Path dir;

  private static Consumer<String> health() {
    HttpClient http = HttpClient.newHttpClient();
    return url -> new ServerClient(url, http, Runnable::run, 1, Duration.ofSeconds(2),
        OpenTelemetry.noop().getTracer("test"), System::nanoTime).checkHealth(Duration.ofSeconds(2));
  }

  /** Polls every 0.1 s, at most 60 s: a bound for a loaded machine (a server stops in about a second). */
  private static void awaitGone(long pid) throws InterruptedException {
    for (int i = 0; i < 600 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false); i++) {
      TimeUnit.MILLISECONDS.sleep(100);
    }
  }

  @Test
  void ravel_listensOnAFreeLoopbackPortAndStopsByItsPid() throws Exception {
    Path weights = WeightsFile.write(dir.resolve("w.bin"), WEIGHTS);

    LaunchedServer s = LaunchedServer.ravel("ravel-tiny", weights, 4096, 64, 128, dir, Duration.ofSeconds(60),
        health());
    long pid = s.pid();
    try {
      assertThat(s.url()).matches("http://127\\.0\\.0\\.1:\\d+");
      health().accept(s.url());
      assertThat(s.log()).isEqualTo(dir.resolve("inference-server-" + pid + ".log"));
      assertThat(Files.readString(s.log())).contains("ravel serve: listening on " + s.url());
      assertThat(s.spanCounts()).as("none before it stopped").isEmpty();
    } finally {
      s.close();
    }
    awaitGone(pid);
    assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
    // it wrote its span counts as it stopped, and they add up
    assertThat(dir.resolve("inference-server-" + pid + ".span-counts.json")).exists();
    assertThat(s.spanCounts()).hasValueSatisfying(c -> assertThat(c.addsUp()).isTrue());
  }

  @Test
  void fromTemplate_substitutesPortAndModelAndWaitsForHealth() throws Exception {
    String template = String.join(" ", javaBinary(), "-cp", LaunchedServer.workersClasspath(),
        LaunchedServer.SERVE_MAIN, "--host", "{host}", "--port", "{port}", "--model-name", "{model}");

    try (LaunchedServer s = LaunchedServer.fromTemplate(template, "tiny-from-template", dir, Duration.ofSeconds(60),
        health())) {
      HttpClient http = HttpClient.newHttpClient();
      ServerClient c = new ServerClient(s.url(), http, Runnable::run, 1, Duration.ofSeconds(5),
          OpenTelemetry.noop().getTracer("test"), System::nanoTime);
      assertThat(c.models()).containsExactly("tiny-from-template");
    }
  }

  @Test
  void fromTemplate_commandThatExits_failsWithItsOutput() {
    assertThatThrownBy(() -> LaunchedServer.fromTemplate("sh -c echo_{port}_no-such-server;exit_3", "m", dir,
        Duration.ofSeconds(20), health()))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("exited with code")
        .hasMessageContaining("no-such-server");
  }

  private static String javaBinary() {
    return ProcessHandle.current().info().command().orElseThrow();
  }
}
