package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.workers.engine.EngineStats;
import java.util.ArrayList;
import java.util.List;

/**
 * The generation engines over each step: the difference of every worker's engine counters ({@link EngineStats})
 * between two step ends, summed over the workers, so that queue time, preemptions and the engines' load have one
 * point per step on the step axis, as the other curves do (the metrics exports come every few seconds instead).
 * A worker whose counters went down was restarted: its counters count from zero again. A worker that could not
 * be read this time (null) is left out of the step and compared with its last reading next time.
 */
final class EngineWindow {
  private final List<EngineStats> last = new ArrayList<>();

  /** Takes {@code now} (one reading per worker, null where one could not be read) as the start of the next step. */
  void start(List<EngineStats> now) {
    next(now);
  }

  /** The engines since the last reading, and {@code now} as the start of the next step. */
  StepRecord.Engine next(List<EngineStats> now) {
    long requests = 0;
    long queueNanos = 0;
    long queueCount = 0;
    long preemptions = 0;
    double running = 0;
    double waiting = 0;
    double kvShare = 0;
    int measured = 0;
    for (int i = 0; i < now.size(); i++) {
      EngineStats cur = now.get(i);
      while (last.size() <= i) {
        last.add(null);
      }
      if (cur == null) {
        continue;
      }
      EngineStats prev = last.get(i);
      if (prev != null && restarted(prev, cur)) {
        prev = null;
      }
      last.set(i, cur);
      requests += cur.requestsFinishedTotal() - (prev == null ? 0 : prev.requestsFinishedTotal());
      queueNanos += cur.queueNanos() - (prev == null ? 0 : prev.queueNanos());
      queueCount += cur.queueCount() - (prev == null ? 0 : prev.queueCount());
      preemptions += cur.preemptions() - (prev == null ? 0 : prev.preemptions());
      double seconds = cur.loadSeconds() - (prev == null ? 0 : prev.loadSeconds());
      if (seconds > 0) {
        measured++;
        running += (cur.runningSeconds() - (prev == null ? 0 : prev.runningSeconds())) / seconds;
        waiting += (cur.waitingSeconds() - (prev == null ? 0 : prev.waitingSeconds())) / seconds;
        if (cur.kvTokenBudget() > 0) {
          kvShare += (cur.kvTokenSeconds() - (prev == null ? 0 : prev.kvTokenSeconds())) / seconds
              / cur.kvTokenBudget();
        }
      }
    }
    return new StepRecord.Engine(requests, queueCount == 0 ? null : queueNanos / 1e9 / queueCount, preemptions,
        measured == 0 ? null : running, measured == 0 ? null : waiting, measured == 0 ? null : kvShare / measured);
  }

  private static boolean restarted(EngineStats prev, EngineStats cur) {
    return cur.requestsFinishedTotal() < prev.requestsFinishedTotal() || cur.queueCount() < prev.queueCount()
        || cur.preemptions() < prev.preemptions() || cur.loadSeconds() < prev.loadSeconds();
  }
}
