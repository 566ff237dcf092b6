package dev.ravel.examples.app;

import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.actor.RavelActorHandle;
import io.opentelemetry.api.common.AttributeKey;
import java.util.ArrayList;
import java.util.List;

/** {@link Front} on Ray: holds a handle on the Python shouter. */
public final class FrontActor extends RavelActor implements Front {
  private static final AttributeKey<Long> WORDS = AttributeKey.longKey("app.words");
  private final RavelActorHandle<Shouter> shouter;

  /** Made by Ray in the actor's process, with the shouter's handle. */
  public FrontActor(Payload<RavelActorHandle<Shouter>> shouter) {
    this.shouter = shouter.value();
  }

  @Override
  public Words relay(Words words) {
    Words shouted = shouter.call(Shouter::shout, words).get();
    try (var s = spans().start(SpanGroup.WORKER, "app.front.stamp")) {
      s.set(WORDS, shouted.items().size());
      List<String> hops = new ArrayList<>(shouted.hops());
      hops.add("front");
      return new Words(shouted.items(), hops);
    }
  }
}
