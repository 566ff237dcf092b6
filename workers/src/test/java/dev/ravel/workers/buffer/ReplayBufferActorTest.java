package dev.ravel.workers.buffer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.task.Problem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The buffer's logic, on an actor built outside Ray: its constructor starts the process telemetry, which
 * is off without {@code RAVEL_TELEMETRY_RUN_ID} and does without a Ray runtime context.
 */
final class ReplayBufferActorTest {
  private final ReplayBufferActor buffer = new ReplayBufferActor();
  private final ExecutorService pool = Executors.newSingleThreadExecutor();

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  @Test
  void push_returnsTheNumberHeld() {
    assertThat(buffer.push(List.of(group("a", 0, 0, 2), group("b", 0, 0, 2)))).isEqualTo(2);
    assertThat(buffer.push(List.of(group("c", 0, 0, 2)))).isEqualTo(3);
  }

  @Test
  void take_returnsGroupsFirstInFirstOut() {
    buffer.push(List.of(group("a", 0, 0, 2), group("b", 0, 0, 2)));
    buffer.push(List.of(group("c", 0, 0, 2)));

    BufferBatch first = buffer.take(0, 2, 1, 0);
    BufferBatch second = buffer.take(0, 2, 1, 0);

    assertThat(prompts(first)).containsExactly("a", "b");
    assertThat(prompts(second)).containsExactly("c");
    assertThat(buffer.stats()).isEqualTo(new BufferStats(0, 3, 3, 0, 0));
  }

  @Test
  void take_dropsAndCountsGroupsOlderThanTheAgeBound() {
    // step 5, max age 1: weight version 3 is too old, 4 and 5 are usable
    buffer.push(List.of(group("old", 3, 4, 3), group("ok4", 4, 5, 2), group("ok5", 5, 5, 2)));

    BufferBatch batch = buffer.take(5, 2, 1, 0);

    assertThat(prompts(batch)).containsExactly("ok4", "ok5");
    assertThat(batch.droppedForAge()).isEqualTo(1);
    assertThat(batch.droppedTrajectories()).isEqualTo(3);
    assertThat(buffer.stats()).isEqualTo(new BufferStats(0, 3, 2, 1, 3));
  }

  @Test
  void take_groupExactlyAtTheAgeBoundIsKept() {
    buffer.push(List.of(group("edge", 3, 4, 2)));

    BufferBatch batch = buffer.take(5, 1, 2, 0);

    assertThat(prompts(batch)).containsExactly("edge");
    assertThat(batch.droppedForAge()).isZero();
  }

  @Test
  void take_zeroAgeBoundKeepsOnlyCurrentWeights() {
    buffer.push(List.of(group("stale", 4, 5, 2), group("fresh", 5, 5, 2)));

    BufferBatch batch = buffer.take(5, 2, 0, 0);

    assertThat(prompts(batch)).containsExactly("fresh");
    assertThat(batch.droppedForAge()).isEqualTo(1);
  }

  @Test
  void take_leavesGroupsGeneratedForALaterStep() {
    buffer.push(List.of(group("for3", 2, 3, 2), group("for2", 2, 2, 2)));

    BufferBatch now = buffer.take(2, 2, 1, 0);

    assertThat(prompts(now)).containsExactly("for2");
    assertThat(buffer.stats().size()).isEqualTo(1);
    assertThat(prompts(buffer.take(3, 2, 1, 0))).containsExactly("for3");
  }

  @Test
  @Timeout(60) // a hang guard only
  void take_returnsFewerWhenNotEnoughArriveBeforeTheTimeout() {
    buffer.push(List.of(group("only", 0, 0, 2)));

    long start = System.nanoTime();
    BufferBatch batch = buffer.take(0, 3, 1, 150);
    Duration waited = Duration.ofNanos(System.nanoTime() - start);

    assertThat(prompts(batch)).containsExactly("only");
    // it waited out its timeout before returning fewer (a lower bound: load can only lengthen the wait)
    assertThat(waited).isGreaterThanOrEqualTo(Duration.ofMillis(150));
  }

  @Test
  @Timeout(60) // 0 must not mean "wait until something arrives" (as Object.wait(0) does): that would hang here
  void take_withZeroTimeoutOnAnEmptyBufferReturnsWithoutWaiting() {
    BufferBatch batch = buffer.take(0, 1, 1, 0);

    assertThat(batch.rollouts()).isEmpty();
  }

  @Test
  @Timeout(120) // a hang guard only
  void push_fromAnotherThreadWakesAWaitingTake() throws Exception {
    buffer.push(List.of(group("a", 0, 0, 2)));
    AtomicReference<Thread> taker = new AtomicReference<>();
    CompletableFuture<BufferBatch> result = CompletableFuture.supplyAsync(() -> {
      taker.set(Thread.currentThread());
      // a timeout far beyond this test's: a take that returns here was woken by the push, not timed out
      return buffer.take(0, 2, 1, 3_600_000);
    }, pool);
    awaitWaiting(taker);

    buffer.push(List.of(group("b", 0, 0, 2)));

    BufferBatch batch = result.get(60, TimeUnit.SECONDS);
    assertThat(prompts(batch)).containsExactly("a", "b");
  }

  /** Until the taking thread is parked in its timed wait (it released the buffer's monitor). */
  private static void awaitWaiting(AtomicReference<Thread> taker) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      Thread t = taker.get();
      if (t != null && t.getState() == Thread.State.TIMED_WAITING) {
        return;
      }
      Thread.sleep(5);
    }
    throw new AssertionError("take did not start waiting");
  }

  private static Rollout group(String prompt, long weightVersion, long targetVersion, int size) {
    List<Trajectory> trajectories = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      trajectories.add(new Trajectory(prompt + "-" + i, new int[] {1, 2}, new int[] {3}, new float[] {-0.5f}, 1.0,
          weightVersion, i));
    }
    return new Rollout(new Problem(prompt, "0"), trajectories, weightVersion, targetVersion, List.of());
  }

  private static List<String> prompts(BufferBatch batch) {
    return batch.rollouts().stream().map(r -> r.problem().prompt()).toList();
  }
}
