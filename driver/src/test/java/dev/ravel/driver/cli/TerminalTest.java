package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

final class TerminalTest {
  @Test
  void colour_isOffOnADumbTerminalWhateverPicocliDetects() {
    assertThat(Terminal.colour(Map.of("TERM", "dumb"), true)).isFalse();
    assertThat(Terminal.colour(Map.of("TERM", "xterm-256color"), true)).isTrue();
    assertThat(Terminal.colour(Map.of(), false)).isFalse();
  }

  @Test
  void columns_comeFromColumnsElseTheDefault() {
    assertThat(Terminal.columns(Map.of("COLUMNS", " 80 "))).isEqualTo(80);
    assertThat(Terminal.columns(Map.of("COLUMNS", "5"))).isEqualTo(20);
    assertThat(Terminal.columns(Map.of("COLUMNS", "wide"))).isEqualTo(Terminal.DEFAULT_COLUMNS);
    assertThat(Terminal.columns(Map.of())).isEqualTo(Terminal.DEFAULT_COLUMNS);
  }
}
