package dev.ravel.examples.app;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.workers.actor.RavelActorHandle;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A pipeline of your own actors on Ray, traced by Ravel: the driver calls the Java actor {@link Front}, which calls
 * the Python actor {@link Shouter}, which calls back the Java actor {@link Echo} for each word. Every call is one
 * span, child of its caller's, in one trace across three processes and two languages.
 */
public final class PipelineApp {
  /** The name the Python actor finds the echo actor by. */
  public static final String ECHO_NAME = "app-echo";
  /** A variable as if exported where the Ray head started: Ravel's environment policy masks it in every actor. */
  public static final String LEAKED = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";

  private PipelineApp() {}

  /**
   * What one run gave.
   *
   * @param traceId the trace of the pipeline call
   * @param answer the words that came back
   * @param failure the message of the exception a failing word brought back
   * @param shouterEnv the Python actor's value of {@link #LEAKED} (absent when unset)
   * @param headValue the value of {@link #LEAKED} in the environment of the Ray head's process (empty when it cannot
   *     be read: Linux's {@code /proc} only)
   * @param runDir the run's folder (its spans)
   */
  public record Result(String traceId, Words answer, String failure, Map<String, String> shouterEnv, String headValue,
      Path runDir) {}

  /** Runs the pipeline once on a Ray head of its own, writing the run {@code runId} under {@code runs}. */
  public static Result run(Path runs, String runId, Path pythonFolder) {
    TelemetryConfig config = TelemetryConfig.builder().runId(runId).runsDir(runs).build();
    try (DriverSession session = DriverSession.builder(config)
        .headEnv(LEAKED, "http://127.0.0.1:9/exported-where-the-head-started")
        .codeSearchPath(List.of(pythonFolder))
        .start()) {
      session.actor(EchoActor::new, Echo.class).name(ECHO_NAME).remote();
      RavelActorHandle<Shouter> shouter = session.pythonActor("app_shouter", "Shouter", "{}", Shouter.class).remote();
      RavelActorHandle<Front> front = session.actor(FrontActor::new, shouter, Front.class).remote();
      String traceId;
      Words answer;
      String failure = null;
      try (var s = session.spans().start(SpanGroup.STEP, "app.pipeline")) {
        traceId = s.spanContext().getTraceId();
        answer = front.call(Front::relay, Words.of("hello", "ray")).get();
        try {
          front.call(Front::relay, Words.of("boom")).get();
        } catch (RuntimeException e) {
          failure = e.getMessage();
        }
      }
      Map<String, String> env = shouter.call(Shouter::environment, List.of(LEAKED)).get();
      String head = environmentOf(session.head().orElseThrow().pid()).getOrDefault(LEAKED, "");
      return new Result(traceId, answer, failure, env, head, config.runDir());
    }
  }

  private static Map<String, String> environmentOf(long pid) {
    Map<String, String> out = new java.util.HashMap<>();
    try {
      byte[] raw = java.nio.file.Files.readAllBytes(Path.of("/proc", Long.toString(pid), "environ"));
      for (String kv : new String(raw, java.nio.charset.StandardCharsets.UTF_8).split("\u0000")) {
        int eq = kv.indexOf('=');
        if (eq > 0) {
          out.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
      }
    } catch (java.io.IOException e) {
      // not Linux, or not ours to read
    }
    return out;
  }

  /** Runs the pipeline: {@code java ... PipelineApp <runs folder> <run id> <python folder>}. */
  public static void main(String[] args) {
    Result r = run(Path.of(args[0]), args[1], Path.of(args[2]));
    System.out.println("answer " + r.answer() + ", trace " + r.traceId() + ", spans in " + r.runDir());
  }
}
