package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

import java.util.List;
import org.junit.jupiter.api.Test;

final class BenchStatsTest {
  @Test
  void ratio_pairsRoundsAndGivesATInterval() {
    BenchStats.Ratio r = BenchStats.ratio(List.of(1.1, 1.3, 1.2), List.of(1.0, 1.0, 1.0));

    assertThat(r.value()).isCloseTo(1.2, offset(1e-12));
    assertThat(r.perRound()).hasSize(3);
    assertThat(r.perRound().get(1)).isCloseTo(1.3, offset(1e-12));
    // sd 0.1, n 3: half width t(0.975, 2) * 0.1 / sqrt(3) = 4.303 * 0.0577
    assertThat(r.high() - r.value()).isCloseTo(4.303 * 0.1 / Math.sqrt(3), offset(1e-6));
    assertThat(r.value() - r.low()).isCloseTo(r.high() - r.value(), offset(1e-12));
  }

  @Test
  void ratio_oneRoundHasNoInterval() {
    BenchStats.Ratio r = BenchStats.ratio(List.of(2.0), List.of(4.0));

    assertThat(r.value()).isEqualTo(0.5);
    assertThat(r.low()).isNull();
    assertThat(r.high()).isNull();
    assertThatThrownBy(() -> BenchStats.ratio(List.of(1.0), List.of())).hasMessageContaining("paired");
  }

  @Test
  void median_ofOddAndEvenCounts() {
    assertThat(BenchStats.median(List.of(3.0, 1.0, 2.0))).isEqualTo(2.0);
    assertThat(BenchStats.median(List.of(4.0, 1.0, 2.0, 3.0))).isEqualTo(2.5);
    assertThat(BenchStats.median(List.of())).isNaN();
  }

  @Test
  void medianOf_givesAnOrderStatisticIntervalAroundTheMedian() {
    List<Double> xs = java.util.stream.IntStream.rangeClosed(1, 20).mapToObj(i -> (double) (21 - i)).toList();

    BenchStats.Ratio m = BenchStats.medianOf(xs);

    assertThat(m.value()).isEqualTo(10.5);
    assertThat(m.low()).isEqualTo(5.0);
    assertThat(m.high()).isEqualTo(16.0);
    assertThat(m.perRound()).isEqualTo(xs);
    assertThat(BenchStats.medianOf(List.of(1.0, 2.0)).low()).isNull();
    assertThat(BenchStats.medianOf(List.of()).value()).isNaN();
  }
}
