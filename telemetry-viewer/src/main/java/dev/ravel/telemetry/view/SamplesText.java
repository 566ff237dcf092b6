package dev.ravel.telemetry.view;

import dev.ravel.telemetry.runs.SampleRecord;
import java.util.List;
import java.util.Locale;

/** The completions a step kept ({@code samples.jsonl}) as plain text, for {@code ravel trace --samples}. */
public final class SamplesText {
  private SamplesText() {}

  /** Step {@code step}'s samples, each on a header line and its prompt, completion and answer below, cut to {@code width}. */
  public static String render(long step, List<SampleRecord> samples, int width) {
    StringBuilder out = new StringBuilder();
    if (samples.isEmpty()) {
      return out.append("samples of step ").append(step)
          .append(": none kept (telemetry.samples_per_step is 0, or the run predates samples.jsonl)\n").toString();
    }
    out.append("samples of step ").append(step).append(" (").append(samples.size()).append(")\n");
    for (SampleRecord s : samples) {
      out.append(String.format(Locale.ROOT, "  group %d #%d  reward %.3f", s.group(), s.index(), s.reward()));
      if (!s.components().isEmpty()) {
        StringBuilder c = new StringBuilder();
        s.components().forEach((k, v) -> c.append(c.length() == 0 ? "" : ", ")
            .append(String.format(Locale.ROOT, "%s %.3f", k, v)));
        out.append(" (").append(c).append(')');
      }
      out.append("  ").append(s.tokens()).append(" tokens  weights v").append(s.weightVersion()).append('\n');
      line(out, "prompt", s.prompt(), width);
      line(out, "completion", s.completion(), width);
      if (!s.answer().isEmpty()) {
        line(out, "answer", s.answer(), width);
      }
    }
    return out.toString();
  }

  /** One labelled text on one line: line breaks shown as a return sign, cut with an ellipsis at {@code width}. */
  private static void line(StringBuilder out, String label, String text, int width) {
    String head = String.format(Locale.ROOT, "    %-11s ", label + ":");
    String flat = text.replace("\r\n", "\u23ce").replace('\n', '\u23ce').replace('\t', ' ');
    int room = Math.max(10, width - head.length());
    out.append(head).append(flat.length() > room ? flat.substring(0, room - 1) + "\u2026" : flat).append('\n');
  }
}
