package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

final class ReportCommandTest {
  @Test
  void overlayName_shortIdsAreJoinedAndLongOnesKeepTheFirstAndADigest() {
    assertThat(ReportCommand.overlayName(List.of("a", "b", "c"))).isEqualTo("report-a-vs-b-vs-c.html");

    List<String> longIds = List.of("x".repeat(128), "y".repeat(128));
    String name = ReportCommand.overlayName(longIds);
    assertThat(name.getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(255);
    assertThat(name).startsWith("report-" + "x".repeat(120) + "-vs-1-more-").endsWith(".html");
    assertThat(ReportCommand.overlayName(List.of("x".repeat(128), "z".repeat(128)))).isNotEqualTo(name);
  }
}
