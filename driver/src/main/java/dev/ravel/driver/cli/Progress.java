package dev.ravel.driver.cli;

import dev.ravel.driver.grpo.StepListener;
import dev.ravel.driver.grpo.StepMetrics;
import java.io.PrintStream;

/**
 * One progress line per step: a bar, reward, KL, loss and step time with its largest phases. On a
 * terminal the bar is redrawn in place; otherwise each step gets its own plain line.
 */
final class Progress implements StepListener {
  private static final int WIDTH = 20;
  private final PrintStream out;
  private final boolean tty;

  Progress(PrintStream out, boolean tty) {
    this.out = out;
    this.tty = tty;
  }

  @Override
  public void onStep(StepMetrics m, int total) {
    int done = m.step() + 1;
    int filled = (int) Math.round(WIDTH * (double) done / total);
    String bar = "#".repeat(filled) + ".".repeat(WIDTH - filled);
    StringBuilder phases = new StringBuilder();
    m.phases().entrySet().stream().sorted((a, b) -> Double.compare(b.getValue(), a.getValue())).limit(3)
        .forEach(e -> phases.append(phases.length() == 0 ? "" : " ").append(e.getKey()).append(' ')
            .append(String.format("%.2fs", e.getValue())));
    String line = String.format("step %3d/%d [%s] reward %.3f  kl %.4f  loss %+.4f  %.2fs (%s)", done, total, bar,
        m.rewardMean(), m.kl(), m.loss(), m.stepSeconds(), phases);
    if (tty) {
      out.print("\r\033[2K" + line + (done == total ? "\n" : ""));
    } else {
      out.println(line);
    }
    out.flush();
  }
}
