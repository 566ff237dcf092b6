package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.runs.StepRecord;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

final class ProgressTest {
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
  private Locale locale;

  @BeforeEach
  void fixLocale() {
    locale = Locale.getDefault();
    Locale.setDefault(Locale.ROOT);
  }

  @AfterEach
  void restoreLocale() {
    Locale.setDefault(locale);
  }

  @Test
  void onStep_notATerminalPrintsOnePlainLinePerStep() {
    Progress p = new Progress(out, false, 80);

    p.onStep(step(1, 0.25, 0.0123), 2);
    p.onStep(step(2, 0.5, 0.0456), 2);

    String text = text();
    assertThat(text).doesNotContain("\u001b");
    List<String> lines = text.lines().toList(); // a carriage return would split a line here too
    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).contains("step   1/2").contains("[##########..........]")
        .contains("reward 0.250").contains("kl 0.0123");
    assertThat(lines.get(1)).contains("step   2/2").contains("[####################]")
        .contains("reward 0.500").contains("kl 0.0456");
    assertThat(text).endsWith(System.lineSeparator());
  }

  @Test
  void onStep_showsTheThreeLargestPhasesLargestFirst() {
    Progress p = new Progress(out, false, 80);

    p.onStep(new StepRecord(1, "sync", 0.1, 0.3, 0.01, 0.02, 0, 10, 10, 3.5,
        Map.of("refit", 0.1, "generation", 2.0, "training", 1.0, "reward", 0.4), 0, 8, 0, 4, "t"), 1);

    assertThat(text()).contains("3.50s (generation 2.00s training 1.00s reward 0.40s)").doesNotContain("refit");
  }

  @Test
  void onStep_terminalRedrawsInPlaceAndEndsWithNewlineOnLastStep() {
    Progress p = new Progress(out, true, 200);

    p.onStep(step(1, 0.25, 0.01), 3);
    assertThat(text()).startsWith("\r\u001b[2K").contains("step   1/3").doesNotContain("\n");

    p.onStep(step(2, 0.3, 0.01), 3);
    assertThat(text()).doesNotContain("\n");

    p.onStep(step(3, 0.5, 0.01), 3);
    String text = text();
    assertThat(text).endsWith("\n");
    assertThat(text.chars().filter(c -> c == '\n').count()).isEqualTo(1);
    assertThat(text.chars().filter(c -> c == '\r').count()).isEqualTo(3);
    assertThat(text.substring(text.lastIndexOf('\r'))).contains("step   3/3").contains("reward 0.500");
  }

  private String text() {
    return bytes.toString(StandardCharsets.UTF_8);
  }

  private static StepRecord step(int i, double reward, double kl) {
    return new StepRecord(i, "sync", reward, 0.3, kl, 0.05, 0.1, 128, 256, 1.5,
        Map.of("generation", 1.0, "training", 0.5), i, 64, 0, 40, "trace");
  }

  @Test
  void onStep_terminalLineFitsTheWidthDroppingPhasesThenLossThenBar() {
    for (int width : new int[] {130, 80, 60, 40, 20}) {
      bytes.reset();
      Progress p = new Progress(out, true, width);

      p.onStep(new StepRecord(7, "sync", 0.123, 0.3, 0.0456, -0.0789, 0, 10, 10, 3.5,
          Map.of("generation", 2.0, "training", 1.0, "reward", 0.4), 0, 8, 0, 4, "t"), 30);

      String line = text().replace("\r\u001b[2K", "");
      assertThat(line.length()).as("at width %d: %s", width, line).isLessThan(width);
      assertThat(line).startsWith("step   7/30");
    }
    bytes.reset();
    new Progress(out, true, 80).onStep(new StepRecord(7, "sync", 0.123, 0.3, 0.0456, -0.0789, 0, 10, 10, 3.5,
        Map.of("generation", 2.0, "training", 1.0, "reward", 0.4), 0, 8, 0, 4, "t"), 30);
    assertThat(text()).contains("reward 0.123").contains("kl 0.0456").contains("loss -0.0789")
        .doesNotContain("generation 2.00s");
  }
}
