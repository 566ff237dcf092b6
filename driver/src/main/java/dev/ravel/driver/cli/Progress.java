package dev.ravel.driver.cli;

import dev.ravel.driver.grpo.StepListener;
import dev.ravel.telemetry.runs.StepRecord;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * One progress line per step: a bar, reward, KL, loss and step time with its largest phases. On a
 * terminal the bar is redrawn in place and the line fits the terminal's width (the phases go first, then
 * the loss, then the bar shrinks); otherwise each step gets its own plain, full line.
 */
final class Progress implements StepListener {
  private static final int BAR = 20;
  private final PrintStream out;
  private final boolean redraw;
  private final int width;

  /** A progress line that is redrawn in place ({@code redraw}) within {@code width} columns. */
  Progress(PrintStream out, boolean redraw, int width) {
    this.out = out;
    this.redraw = redraw;
    this.width = width;
  }

  @Override
  public void onStep(StepRecord m, int total) {
    int done = m.step(); // steps are numbered from 1
    StringBuilder phases = new StringBuilder();
    m.phases().entrySet().stream().sorted((a, b) -> Double.compare(b.getValue(), a.getValue())).limit(3)
        .forEach(e -> phases.append(phases.length() == 0 ? "" : " ").append(e.getKey()).append(' ')
            .append(String.format("%.2fs", e.getValue())));
    String head = String.format("step %3d/%d", done, total);
    String stats = String.format("reward %.3f  kl %.4f", m.rewardMean(), m.kl())
        + (m.eval() == null ? "" : String.format("  eval %.3f (acc %.2f)", m.eval().reward(), m.eval().accuracy()));
    String loss = String.format("  loss %+.4f", m.loss());
    String time = String.format("  %.2fs", m.stepSeconds());
    String tail = phases.length() == 0 ? "" : " (" + phases + ")";
    List<String> variants = new ArrayList<>();
    variants.add(head + " [" + bar(done, total, BAR) + "] " + stats + loss + time + tail);
    variants.add(head + " [" + bar(done, total, BAR) + "] " + stats + loss + time);
    variants.add(head + " [" + bar(done, total, 10) + "] " + stats + loss + time);
    variants.add(head + " [" + bar(done, total, 10) + "] " + stats + time);
    variants.add(head + " " + stats + time);
    variants.add(head + " " + String.format("reward %.3f", m.rewardMean()));
    String line = variants.get(0);
    if (redraw) {
      line = variants.stream().filter(v -> v.length() < width).findFirst()
          .orElse(variants.get(variants.size() - 1));
      if (line.length() >= width) {
        line = line.substring(0, Math.max(1, width - 1)); // never wrap: a wrapped line cannot be redrawn
      }
      out.print("\r\033[2K" + line + (done >= total ? "\n" : ""));
    } else {
      out.println(line);
    }
    out.flush();
  }

  private static String bar(int done, int total, int n) {
    int filled = (int) Math.round(n * Math.min(1.0, (double) done / total));
    return "#".repeat(filled) + ".".repeat(n - filled);
  }
}
