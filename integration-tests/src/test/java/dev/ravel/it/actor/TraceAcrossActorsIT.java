package dev.ravel.it.actor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.driver.demo.RelayDemo;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.workers.demo.Relay;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** On a real Ray head on loopback: the driver's span and both actors' spans form one trace. */
final class TraceAcrossActorsIT {
  @TempDir
  static Path runs;

  static TelemetryConfig config;
  static DriverSession session;
  static RelayDemo demo;
  static RelayDemo.Result result;
  static Throwable failure;
  static String afterFailure;
  static RunTraces traces;

  @BeforeAll
  static void runDemo() {
    config = TelemetryConfig.builder().runId("it-trace").runsDir(runs).build();
    session = DriverSession.builder(config).env(SharedRayHead.env()).start();
    demo = new RelayDemo(session);
    result = demo.run(2);
    try {
      demo.relay().call(Relay::relayFailure, "boom").get();
    } catch (Throwable t) {
      failure = t;
    }
    afterFailure = demo.relay().call(Relay::relay, "still there?").get();
    session.close();
    traces = RunTraces.readDir(config.runDir());
  }

  @AfterAll
  static void stop() {
    if (session != null) {
      session.close();
    }
  }

  @Test
  void relay_driverAndBothActorSpansFormOneTraceWithParentChildLinks() {
    assertThat(traces.problems()).isEmpty();
    List<SpanRecord> inTrace = traces.byTrace().get(result.traceId());
    assertThat(inTrace).isNotNull();
    Map<String, SpanRecord> byId = traces.byId();

    SpanRecord root = only(inTrace, "rl.demo.run");
    assertThat(root.isRoot()).isTrue();
    assertThat(root.role()).isEqualTo("driver");

    List<SpanRecord> relays = inTrace.stream().filter(s -> s.name().equals("rl.relay.relay")).toList();
    List<SpanRecord> responds = inTrace.stream().filter(s -> s.name().equals("rl.responder.respond")).toList();
    assertThat(relays).hasSize(2).allSatisfy(s -> {
      assertThat(s.parentSpanId()).isEqualTo(root.spanId());
      assertThat(s.role()).isEqualTo("relay");
      assertThat(s.kind()).isEqualTo(2);
    });
    assertThat(responds).hasSize(2).allSatisfy(s -> {
      assertThat(byId.get(s.parentSpanId())).isNotNull();
      assertThat(byId.get(s.parentSpanId()).name()).isEqualTo("rl.relay.relay");
      assertThat(s.role()).isEqualTo("responder");
    });
    // three processes, one run id
    assertThat(inTrace.stream().map(SpanRecord::process).distinct()).hasSize(3);
    assertThat(inTrace).allSatisfy(s -> assertThat(s.runId()).isEqualTo("it-trace"));
    assertThat(relays.get(0).resource()).containsKeys("ray.actor.id", "ray.job.id", "ray.node.id");
  }

  @Test
  void relay_answersComeFromTwoOtherProcesses() {
    assertThat(result.answers()).hasSize(2).allSatisfy(a -> assertThat(a).matches("relay pid \\d+ <- responder pid \\d+: hello \\d"));
    long driverPid = ProcessHandle.current().pid();
    assertThat(result.answers().get(0)).doesNotContain("pid " + driverPid + " ");
  }

  @Test
  void relayFailure_reachesCallerAsTheActorsExceptionAndActorsLive() {
    assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessage("boom");
    assertThat(afterFailure).endsWith("still there?");
    SpanRecord failed = only(traces.spans(), "rl.responder.fail");
    assertThat(failed.isError()).isTrue();
    assertThat(failed.events()).anySatisfy(e -> {
      assertThat(e.name()).isEqualTo("exception");
      assertThat(e.attributes()).containsEntry("exception.type", "java.lang.IllegalStateException");
    });
    SpanRecord relayFailed = only(traces.spans(), "rl.relay.relay_failure");
    assertThat(relayFailed.isError()).isTrue();
    assertThat(failed.parentSpanId()).isEqualTo(relayFailed.spanId());
  }

  @Test
  void close_actorsReportTheirSpanCountsToTheDriver() {
    assertThat(session.actorStats()).hasSize(2).allSatisfy((actor, stats) -> {
      assertThat(stats.ended()).isPositive();
      assertThat(stats.exported()).isEqualTo(stats.ended());
      assertThat(stats.dropped()).isZero();
      assertThat(stats.failed()).isZero();
    });
  }

  private static SpanRecord only(List<SpanRecord> spans, String name) {
    List<SpanRecord> found = spans.stream().filter(s -> s.name().equals(name)).toList();
    assertThat(found).as("spans named %s", name).hasSize(1);
    return found.get(0);
  }
}
