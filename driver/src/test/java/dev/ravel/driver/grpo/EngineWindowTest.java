package dev.ravel.driver.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The engines over each step: counter differences between step ends, summed over the workers. */
final class EngineWindowTest {
  private static EngineStats stats(long finished, long queueMs, long queued, long preemptions, double seconds,
      double running, double kvTokens) {
    return EngineStats.builder().finished(FinishReason.STOP, finished).queue(queueMs * 1_000_000L, queued)
        .preemptions(preemptions).load(seconds, running, 0.5 * running, kvTokens).kvTokens(0, 100).build();
  }

  @Test
  void next_twoWorkers_differencesSummedAndLoadMeansOverTheInterval() {
    EngineWindow w = new EngineWindow();
    w.start(List.of(stats(10, 100, 10, 1, 10, 5, 100), stats(4, 40, 4, 0, 10, 2, 50)));

    StepRecord.Engine e = w.next(List.of(stats(18, 260, 18, 3, 12, 9, 300), stats(8, 80, 8, 0, 12, 4, 90)));

    assertThat(e.requests()).isEqualTo(12);
    assertThat(e.queueTimeMean()).isCloseTo(0.2 / 12, within(1e-12)); // (160 + 40) ms over 12 requests
    assertThat(e.preemptions()).isEqualTo(2);
    assertThat(e.runningMean()).isCloseTo(2.0 + 1.0, within(1e-12)); // 4 request-seconds and 2 over 2 s
    assertThat(e.waitingMean()).isCloseTo(1.5, within(1e-12));
    assertThat(e.kvUsageMean()).isCloseTo((200.0 / 2 / 100 + 40.0 / 2 / 100) / 2, within(1e-12));
  }

  @Test
  void next_restartedWorker_countsFromZeroAndAnUnreadWorkerIsLeftOutUntilRead() {
    EngineWindow w = new EngineWindow();
    w.start(List.of(stats(10, 100, 10, 1, 10, 5, 100), stats(4, 40, 4, 0, 10, 2, 50)));

    StepRecord.Engine e = w.next(Arrays.asList(stats(3, 30, 3, 0, 1, 1, 10), null)); // 0 restarted, 1 unread
    assertThat(e.requests()).isEqualTo(3);
    assertThat(e.queueTimeMean()).isCloseTo(0.01, within(1e-12));

    StepRecord.Engine later = w.next(Arrays.asList(stats(3, 30, 3, 0, 2, 1, 10), stats(9, 90, 9, 0, 12, 2, 50)));
    assertThat(later.requests()).isEqualTo(5); // worker 1 against its last reading
  }

  @Test
  void next_engineWithoutLoadIntegrals_hasNoLoadMeansAndNoQueueWithoutRequests() {
    EngineWindow w = new EngineWindow();
    EngineStats server = EngineStats.builder().preemptions(2).build(); // over HTTP: no load measured
    w.start(List.of(server));
    StepRecord.Engine e = w.next(List.of(EngineStats.builder().preemptions(5).build()));
    assertThat(e.preemptions()).isEqualTo(3);
    assertThat(e.queueTimeMean()).isNull();
    assertThat(e.runningMean()).isNull();
    assertThat(e.kvUsageMean()).isNull();
  }
}
