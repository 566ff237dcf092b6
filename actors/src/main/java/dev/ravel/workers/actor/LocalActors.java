package dev.ravel.workers.actor;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The actors of this process that in-process handles ({@link RavelActorHandle#local}) point at, by id, so
 * that such a handle survives Java serialization (inside a {@link Payload}) within the process. Each actor
 * serves at most its {@code maxConcurrency} calls at once, as a Ray actor does.
 */
final class LocalActors {
  private static final Map<String, Entry> ACTORS = new ConcurrentHashMap<>();
  private static final AtomicLong IDS = new AtomicLong();

  private LocalActors() {}

  private record Entry(RavelActor actor, ExecutorService calls) {}

  static String register(RavelActor actor, int maxConcurrency) {
    if (maxConcurrency < 1) {
      throw new IllegalArgumentException("maxConcurrency must be at least 1, got " + maxConcurrency);
    }
    String id = "local-" + IDS.incrementAndGet();
    ExecutorService calls = Executors.newFixedThreadPool(maxConcurrency, r -> {
      Thread t = new Thread(r, id + "-" + actor.getClass().getSimpleName());
      t.setDaemon(true);
      return t;
    });
    ACTORS.put(id, new Entry(actor, calls));
    return id;
  }

  /**
   * Runs {@code call} on the actor, after a round trip through the codec (so that, as across processes,
   * the callee gets its own copies and an argument that cannot travel fails here too).
   */
  static CompletableFuture<byte[]> invoke(String id, ActorInvocation call) {
    Entry e = ACTORS.get(id);
    if (e == null) {
      return CompletableFuture.failedFuture(new IllegalStateException("no in-process actor " + id
          + " (released, or the handle came from another process)"));
    }
    ActorInvocation copy = (ActorInvocation) Codec.decode(Codec.encode(call));
    CompletableFuture<byte[]> out = new CompletableFuture<>();
    e.calls().execute(() -> {
      try {
        out.complete(e.actor().serve(copy));
      } catch (Throwable t) {
        out.completeExceptionally(t);
      }
    });
    return out;
  }

  static void release(String id) {
    Entry e = ACTORS.remove(id);
    if (e != null) {
      e.calls().shutdownNow();
    }
  }
}
