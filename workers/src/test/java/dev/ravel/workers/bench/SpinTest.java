package dev.ravel.workers.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SpinTest {
  @Test
  void answer_spinsAtLeastTheTimeAndPadsToTheLength() {
    String a = Spin.answer("request", 3_000_000L, 500);
    assertThat(a).hasSize(500);
    assertThat(Spin.bodyNanos(a)).isGreaterThanOrEqualTo(3_000_000L);
    assertThat(a.substring(a.indexOf(':') + 1)).matches("x*");
  }

  @Test
  void answer_lengthShorterThanTheHead_keepsTheWholeHead() {
    String a = Spin.answer("", 0, 1);
    assertThat(a).endsWith(":");
    assertThat(Spin.bodyNanos(a)).isNotNegative();
  }

  @Test
  void bodyNanos_notASpinnersAnswer_namesIt() {
    assertThatThrownBy(() -> Spin.bodyNanos("oops")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a spinner's answer: oops");
    assertThatThrownBy(() -> Spin.bodyNanos(null)).hasMessageContaining("null");
  }
}
