package dev.ravel.driver.grpo;

import java.util.LinkedHashMap;
import java.util.Map;

/** Wall time per phase of one step, measured whether or not the phase's span is on. */
final class PhaseClock {
  private final Map<String, Double> phases = new LinkedHashMap<>();
  private final long start = System.nanoTime();

  <T> T time(String phase, java.util.function.Supplier<T> body) {
    long t0 = System.nanoTime();
    try {
      return body.get();
    } finally {
      phases.merge(phase, (System.nanoTime() - t0) / 1e9, Double::sum);
    }
  }

  void time(String phase, Runnable body) {
    time(phase, () -> {
      body.run();
      return null;
    });
  }

  double seconds(String phase) {
    return phases.getOrDefault(phase, 0.0);
  }

  double elapsed() {
    return (System.nanoTime() - start) / 1e9;
  }

  Map<String, Double> phases() {
    return phases;
  }
}
