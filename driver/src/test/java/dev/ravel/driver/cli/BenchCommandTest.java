package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.telemetry.traces.SpanRecord;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BenchCommandTest {
  private static final long MS = 1_000_000L;

  private static SpanRecord span(String name, String role, long pid, long startMs, long endMs) {
    return new SpanRecord("t", name + startMs, "", name, 1, startMs * MS, endMs * MS, 0, "", Map.of(),
        Map.of("rl.process.role", role, "process.pid", pid), List.of(), List.of(), "test");
  }

  @Test
  void busyPerStep_overlappingCallsOfOneWorkerCountOnceAndStepOneIsLeftOut() {
    List<SpanRecord> spans = List.of(
        span("rl.grpo.step", "driver", 1, 0, 100),
        span("rl.grpo.step", "driver", 1, 100, 200),
        span("rl.grpo.step", "driver", 1, 200, 300),
        // step 1 (warm-up): not counted
        span("rl.worker.generate_async", "generation_worker", 2, 10, 90),
        // steps 2-3: two overlapping calls (110-170 busy, 60 ms) and one alone (210-250, 40 ms)
        span("rl.worker.generate_async", "generation_worker", 2, 110, 150),
        span("rl.worker.generate_async", "generation_worker", 2, 120, 170),
        span("rl.worker.generate_async", "generation_worker", 2, 210, 250),
        span("rl.trainer.train", "policy_trainer", 3, 150, 190),
        span("rl.trainer.train", "policy_trainer", 3, 250, 290),
        span("rl.collector.publish", "trajectory_collector", 4, 120, 300));

    double[] busy = BenchCommand.busyPerStep(spans);

    assertThat(busy[0]).isCloseTo((60 + 40) / 2 / 1e3, within(1e-9));
    assertThat(busy[1]).isCloseTo((40 + 40) / 2 / 1e3, within(1e-9));
  }

  @Test
  void busyPerStep_withoutSpansIsNaN() {
    assertThat(BenchCommand.busyPerStep(List.of())).containsOnly(Double.NaN);
  }
}
