package dev.ravel.benchmarks;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Runs the benchmarks (JMH's own command-line options apply, e.g. {@code -f 2 -wi 5 -i 10}) and prints, from
 * that one run, each Ravel helper's time over the bare SDK's for the same work, with the bounds that JMH's
 * 99.9% error intervals of the two give.
 */
public final class Ratios {
  private Ratios() {}

  /** Pairs of (Ravel benchmark, bare SDK benchmark). */
  static final Map<String, String> PAIRS = Map.of("ravelSpan", "bareSdkSpan", "ravelCarrier", "bareSdkPropagation");

  public static void main(String[] args) throws RunnerException, CommandLineOptionException {
    Options cli = new CommandLineOptions(args);
    Options opts = new OptionsBuilder().parent(cli).include(SpanBenchmark.class.getName()).build();
    Collection<RunResult> results = new Runner(opts).run();
    Map<String, double[]> scores = new LinkedHashMap<>();
    for (RunResult r : results) {
      String label = r.getParams().getBenchmark();
      String method = label.substring(label.lastIndexOf('.') + 1);
      scores.put(method, new double[] {r.getPrimaryResult().getScore(), r.getPrimaryResult().getScoreError()});
    }
    System.out.println();
    PAIRS.forEach((ravel, bare) -> {
      double[] a = scores.get(ravel);
      double[] b = scores.get(bare);
      if (a == null || b == null) {
        return;
      }
      double errA = Double.isNaN(a[1]) ? 0 : a[1];
      double errB = Double.isNaN(b[1]) ? 0 : b[1];
      String bounds = b[0] - errB > 0 && a[0] - errA > 0
          ? String.format("%.3f-%.3f", (a[0] - errA) / (b[0] + errB), (a[0] + errA) / (b[0] - errB))
          : "too wide to bound: run more iterations (-i) or forks (-f)";
      System.out.printf("%s / %s: %.3f (%.1f ns vs %.1f ns per op; from JMH's error intervals: %s)%n", ravel, bare,
          a[0] / b[0], a[0], b[0], bounds);
    });
  }
}
