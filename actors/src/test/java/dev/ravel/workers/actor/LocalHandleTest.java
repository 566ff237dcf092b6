package dev.ravel.workers.actor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** In-process handles ({@link RavelActorHandle#local}): the calling path of Ray handles, without Ray. */
final class LocalHandleTest {
  @ActorRole(name = "counter", spans = "counter")
  public interface Counter extends RavelRole {
    int add(int[] values);

    String fail(String message);

    int slow(long millis);

    int meet(long timeoutMillis);
  }

  public static final class CounterActor extends RavelActor implements Counter {
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicInteger maxRunning = new AtomicInteger();

    @Override
    public int add(int[] values) {
      int sum = 0;
      for (int i = 0; i < values.length; i++) {
        sum += values[i];
        values[i] = 0; // the caller's array must not change: arguments travel as copies
      }
      return sum;
    }

    @Override
    public String fail(String message) {
      throw new IllegalStateException(message);
    }

    @Override
    public int slow(long millis) {
      maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
      try {
        Thread.sleep(millis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      running.decrementAndGet();
      return maxRunning.get();
    }

    /** Waits (at most {@code timeoutMillis}) until another call runs beside this one; the most seen at once. */
    @Override
    public int meet(long timeoutMillis) {
      maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
      long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
      try {
        while (maxRunning.get() < 2 && System.nanoTime() < deadline) {
          Thread.sleep(1);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      running.decrementAndGet();
      return maxRunning.get();
    }
  }

  private final List<RavelActorHandle<?>> handles = new ArrayList<>();

  @AfterEach
  void release() {
    handles.forEach(RavelActorHandle::release);
  }

  private RavelActorHandle<Counter> counter(int concurrency) {
    RavelActorHandle<Counter> h = RavelActorHandle.local(new CounterActor(), Counter.class, concurrency);
    handles.add(h);
    return h;
  }

  @Test
  void call_returnsTheResultAndArgumentsTravelAsCopies() {
    int[] values = {1, 2, 3};

    assertThat(counter(1).call(Counter::add, values).get()).isEqualTo(6);
    assertThat(values).containsExactly(1, 2, 3);
  }

  @Test
  void getAll_batchOfCalls_valuesInTheOrderOfTheRefsWithinOneDeadline() {
    RavelActorHandle<Counter> h = counter(2);
    List<RavelRef<Integer>> refs = List.of(h.call(Counter::add, new int[] {1}), h.call(Counter::add, new int[] {2, 3}),
        h.call(Counter::add, new int[] {4}));

    assertThat(RavelRef.getAll(refs)).containsExactly(1, 5, 4);
    assertThat(RavelRef.getAll(refs, 60_000)).containsExactly(1, 5, 4);
  }

  @Test
  void getAll_oneCallFails_itsExceptionIsRethrownAsItself() {
    RavelActorHandle<Counter> h = counter(1);
    List<RavelRef<String>> refs = List.of(h.call(Counter::fail, "first"), h.call(Counter::fail, "second"));

    assertThatThrownBy(() -> RavelRef.getAll(refs, 60_000)).isInstanceOf(IllegalStateException.class)
        .hasMessage("first");
  }

  @Test
  void call_exceptionIsRethrownAsItself() {
    RavelRef<String> ref = counter(1).call(Counter::fail, "engine down");

    assertThatThrownBy(ref::get).isInstanceOf(IllegalStateException.class).hasMessage("engine down");
  }

  @Test
  void call_servesAtMostMaxConcurrencyAtOnce() {
    RavelActorHandle<Counter> one = counter(1);
    List<RavelRef<Integer>> refs = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      refs.add(one.call(Counter::slow, 20L));
    }
    refs.forEach(RavelRef::get);
    assertThat(one.call(Counter::slow, 0L).get()).isEqualTo(1);

    // two calls that each wait for the other (60 s at most): they meet only if the handle serves them at once
    RavelActorHandle<Counter> four = counter(4);
    List<RavelRef<Integer>> parallel = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      parallel.add(four.call(Counter::meet, 60_000L));
    }
    assertThat(parallel).allSatisfy(r -> assertThat(r.get()).isEqualTo(2));
  }

  @Test
  void handle_survivesAPayloadRoundTripInTheSameProcess() {
    RavelActorHandle<Counter> h = counter(1);

    RavelActorHandle<Counter> back = Payload.of(h).value();

    assertThat(back.isLocal()).isTrue();
    assertThat(back.call(Counter::add, new int[] {4, 5}).get()).isEqualTo(9);
  }

  @Test
  void release_laterCallsFailNamingTheActor() {
    RavelActorHandle<Counter> h = counter(1);
    h.release();

    assertThatThrownBy(() -> h.call(Counter::add, new int[] {1}).get())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("no in-process actor");
  }

  @Test
  void rayHandle_ofALocalHandleFailsClearly() {
    RavelActorHandle<Counter> h = counter(1);

    assertThatThrownBy(h::rayHandle).isInstanceOf(IllegalStateException.class).hasMessageContaining("no Ray handle");
    assertThatThrownBy(() -> h.call(Counter::add, new int[] {1}).rayRef())
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void local_actorThatDoesNotImplementTheRoleIsRejected() {
    assertThatThrownBy(() -> RavelActorHandle.local(new CounterActor(), Runnable.class, 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not implement java.lang.Runnable");
  }
}
