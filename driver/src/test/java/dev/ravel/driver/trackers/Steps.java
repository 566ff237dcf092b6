package dev.ravel.driver.trackers;

import dev.ravel.telemetry.runs.StepRecord;
import java.util.LinkedHashMap;
import java.util.Map;

/** Step records for the trackers' tests: every field set, each to a value of its own. */
final class Steps {
  private Steps() {}

  static StepRecord full(int step) {
    Map<String, Double> phases = new LinkedHashMap<>();
    phases.put("generation", 0.5 + step);
    phases.put("training", 0.25);
    return new StepRecord(step, "async", 0.125 * step, 0.4, 0.01 * step, -0.02, 0.1, 128, 256.5, 1.5 + step, phases,
        step + 1L, 16, 2, 12, "trace" + step, new StepRecord.Completions(3.5, 4, 1),
        new StepRecord.Eval(0.75, 0.5, 8),
        new StepRecord.Update(1.25, 1e-3, 2.5, 0.01, 0.02, 0.03, 1.01, 1.5, 0.04, 3, 13, 1),
        new StepRecord.Rewards(Map.of("format", 0.9), 1),
        new StepRecord.Lag(Map.of(0, 12, 1, 4), 0.25, 1, 5, 2), new StepRecord.Engine(24, 0.125, 2, 1.5, 0.5, 0.25));
  }

  static StepRecord plain(int step) {
    return new StepRecord(step, "sync", 0.5, 0.1, 0.01, -0.02, 0.1, 128, 256.0, 1.5, Map.of("generation", 0.5), step,
        8, 0, 4, "trace" + step);
  }
}
