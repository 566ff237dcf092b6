package dev.ravel.driver.demo;

import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.demo.Relay;
import dev.ravel.workers.demo.RelayActor;
import dev.ravel.workers.demo.Responder;
import dev.ravel.workers.demo.ResponderActor;
import java.util.ArrayList;
import java.util.List;

/**
 * The first driver: two actors, the first calling the second, and traced calls from the driver. One
 * trace: {@code rl.demo.run} (driver) -> {@code rl.relay.relay} (relay process) ->
 * {@code rl.responder.respond} (responder process).
 */
public final class RelayDemo {
  private final DriverSession session;
  private final RavelActorHandle<Responder> responder;
  private final RavelActorHandle<Relay> relay;

  public RelayDemo(DriverSession session) {
    this.session = session;
    this.responder = session.actor(ResponderActor::new, Responder.class).remote();
    this.relay = session.actor(RelayActor::new, responder, Relay.class).remote();
  }

  public RavelActorHandle<Relay> relay() {
    return relay;
  }

  public RavelActorHandle<Responder> responder() {
    return responder;
  }

  /** Sends {@code calls} messages through the relay inside one driver span; returns the trace and answers. */
  public Result run(int calls) {
    List<String> answers = new ArrayList<>();
    try (ScopedSpan s = session.spans().start(SpanGroup.STEP, SpanNames.DEMO_RUN)) {
      s.set(RavelAttributes.DEMO_CALLS, (long) calls);
      for (int i = 0; i < calls; i++) {
        answers.add(relay.call(Relay::relay, "hello " + i).get());
      }
      return new Result(s.spanContext().getTraceId(), answers);
    }
  }

  /** What one demo run produced. */
  public record Result(String traceId, List<String> answers) {}
}
