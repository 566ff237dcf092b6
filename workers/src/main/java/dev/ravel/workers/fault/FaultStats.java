package dev.ravel.workers.fault;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a {@link Failover} saw: each actor's processes in the order they served (a restart adds one), and the
 * calls that failed because an actor's process died, were issued again, and how many generation requests
 * those retries carried.
 *
 * @param processes by actor ({@code generation_worker/0}, {@code reward_environment}), the process ids seen
 * @param failedCalls calls that failed because the actor's process died under them (retries included)
 * @param retriedCalls calls issued again after such a failure
 * @param retriedRequests generation requests in the retried calls, each issued again once per retry
 */
public record FaultStats(Map<String, List<Long>> processes, long failedCalls, long retriedCalls, long retriedRequests)
    implements Serializable {
  public FaultStats {
    Map<String, List<Long>> copy = new LinkedHashMap<>();
    processes.forEach((k, v) -> copy.put(k, List.copyOf(v)));
    processes = java.util.Collections.unmodifiableMap(copy);
  }

  /** Nothing seen. */
  public static final FaultStats NONE = new FaultStats(Map.of(), 0, 0, 0);

  /** Restarts of all actors: processes seen beyond each actor's first. */
  public long restarts() {
    return processes.values().stream().mapToLong(p -> Math.max(0, p.size() - 1)).sum();
  }

  /**
   * Both views together (the driver's and the collector's see the same actors): an actor's processes are
   * the union, so a restart both saw counts once; the call counts add.
   */
  public FaultStats plus(FaultStats other) {
    Map<String, List<Long>> p = new LinkedHashMap<>();
    processes.forEach((k, v) -> p.put(k, new ArrayList<>(v)));
    other.processes.forEach((k, v) -> {
      List<Long> mine = p.computeIfAbsent(k, x -> new ArrayList<>());
      v.stream().filter(pid -> !mine.contains(pid)).forEach(mine::add);
    });
    return new FaultStats(p, failedCalls + other.failedCalls, retriedCalls + other.retriedCalls,
        retriedRequests + other.retriedRequests);
  }

  /** As run.json has it. */
  public Map<String, Object> json() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("restarts", restarts());
    m.put("failed_calls", failedCalls);
    m.put("retried_calls", retriedCalls);
    m.put("retried_requests", retriedRequests);
    m.put("processes", processes);
    return m;
  }
}
