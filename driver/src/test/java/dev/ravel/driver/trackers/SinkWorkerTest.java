package dev.ravel.driver.trackers;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.runs.StepRecord;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

final class SinkWorkerTest {
  /** A tracker that records what it got, failing or blocking as told. */
  static final class FakeSink implements Sink {
    final List<Integer> sent = Collections.synchronizedList(new ArrayList<>());
    final List<String> finished = Collections.synchronizedList(new ArrayList<>());
    volatile boolean failStart;
    volatile boolean failSend;
    final CountDownLatch release = new CountDownLatch(1);
    volatile boolean block;
    volatile boolean closed;

    @Override
    public String name() {
      return "fake";
    }

    @Override
    public void start() throws Exception {
      if (failStart) {
        throw new java.io.IOException("cannot reach http://127.0.0.1:1 (runs/create): Connection refused");
      }
    }

    @Override
    public void send(List<StepRecord> steps) throws Exception {
      if (block) {
        release.await();
      }
      if (failSend) {
        throw new java.io.IOException("HTTP 500");
      }
      steps.forEach(s -> sent.add(s.step()));
    }

    @Override
    public void finish(String status) {
      finished.add(status);
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  private static long deadline(long seconds) {
    return System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
  }

  @Test
  void close_afterSteps_deliversEachInOrderAndEndsTheRun() {
    FakeSink sink = new FakeSink();
    List<String> warnings = new ArrayList<>();
    SinkWorker w = new SinkWorker(sink, warnings::add);
    w.start();

    for (int i = 1; i <= 120; i++) {
      w.offer(Steps.plain(i));
    }
    w.close("succeeded", deadline(60));

    assertThat(sink.sent).hasSize(120).isSorted();
    assertThat(sink.finished).containsExactly("succeeded");
    assertThat(sink.closed).isTrue();
    assertThat(w.json()).containsEntry("steps", 120L).containsEntry("sent", 120L).containsEntry("failed", 0L)
        .containsEntry("dropped", 0L).containsEntry("errors", 0L);
    assertThat(warnings).isEmpty();
  }

  @Test
  void offer_aTrackerThatFails_countsEveryStepAsFailedAndWarnsOnce() {
    FakeSink sink = new FakeSink();
    sink.failStart = true;
    List<String> warnings = Collections.synchronizedList(new ArrayList<>());
    SinkWorker w = new SinkWorker(sink, warnings::add);
    w.start();

    for (int i = 1; i <= 5; i++) {
      w.offer(Steps.plain(i));
    }
    w.close("succeeded", deadline(60));

    Map<String, Object> json = w.json();
    assertThat(json).containsEntry("steps", 5L).containsEntry("sent", 0L).containsEntry("failed", 5L)
        .containsEntry("dropped", 0L);
    assertThat((Long) json.get("errors")).isGreaterThanOrEqualTo(1L);
    assertThat(json.get("first_error").toString()).contains("Connection refused");
    assertThat(warnings).hasSize(1);
    assertThat(warnings.get(0)).startsWith("tracker fake failed: cannot reach").contains("the run goes on");
    assertThat(sink.finished).as("a run that was never created is not ended").isEmpty();
  }

  @Test
  void offer_aTrackerRefusingSteps_countsThemFailedAndKeepsTrying() {
    FakeSink sink = new FakeSink();
    sink.failSend = true;
    List<String> warnings = Collections.synchronizedList(new ArrayList<>());
    SinkWorker w = new SinkWorker(sink, warnings::add);
    w.start();

    w.offer(Steps.plain(1));
    w.offer(Steps.plain(2));
    w.close("failed", deadline(60));

    assertThat(w.counts()).containsExactly(2, 0, 2, 0);
    assertThat(warnings).hasSize(1);
    assertThat(sink.finished).containsExactly("failed");
  }

  @Test
  void offer_aTrackerThatHangs_neverWaitsAndTheCloseDeadlineCountsWhatIsLeftAsDropped() {
    FakeSink sink = new FakeSink();
    sink.block = true;
    List<String> warnings = Collections.synchronizedList(new ArrayList<>());
    SinkWorker w = new SinkWorker(sink, warnings::add);
    w.start();

    for (int i = 1; i <= SinkWorker.QUEUE_CAPACITY + 500; i++) {
      w.offer(Steps.plain(i)); // returns at once: the tracker's thread holds at most one batch
    }
    w.close("succeeded", System.nanoTime()); // the deadline has passed already

    long[] c = w.counts();
    assertThat(c[0]).isEqualTo(SinkWorker.QUEUE_CAPACITY + 500);
    assertThat(c[1]).isZero();
    assertThat(c[1] + c[2] + c[3]).isEqualTo(c[0]);
    assertThat(c[3]).isGreaterThanOrEqualTo(500);
    assertThat(sink.closed).isTrue();
    assertThat(warnings).singleElement().asString().contains("did not finish by the close deadline");
  }

  @Test
  void offer_afterClose_isCountedAsDropped() {
    FakeSink sink = new FakeSink();
    SinkWorker w = new SinkWorker(sink, x -> { });
    w.start();
    w.close("succeeded", deadline(60));

    w.offer(Steps.plain(1));

    assertThat(w.counts()).containsExactly(1, 0, 0, 1);
  }
}
