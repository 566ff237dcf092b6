package dev.ravel.workers.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

final class AdvantagesTest {
  @Test
  void groupRelative_normalisesWithinEachGroup() {
    // group 1: mean 0.5, population std 0.5; group 2: mean 2, std sqrt(2/3)
    double[] a = Advantages.groupRelative(new double[] {1, 0, 0, 1, 1, 2, 3, 2}, 4, 0);

    assertThat(a[0]).isCloseTo(1, within(1e-12));
    assertThat(a[1]).isCloseTo(-1, within(1e-12));
    assertThat(a[4]).isCloseTo(-1 / Math.sqrt(0.5), within(1e-12));
    assertThat(a[6]).isCloseTo(1 / Math.sqrt(0.5), within(1e-12));
    assertThat(a[5]).isZero();
  }

  @Test
  void groupRelative_oneSuccessInEightGetsTheLargeAdvantage() {
    double[] a = Advantages.groupRelative(new double[] {0, 0, 0, 1, 0, 0, 0, 0}, 8, 1e-6);

    double std = Math.sqrt(0.125 * 0.875);
    assertThat(a[3]).isCloseTo(0.875 / (std + 1e-6), within(1e-9));
    assertThat(a[0]).isCloseTo(-0.125 / (std + 1e-6), within(1e-9));
  }

  @Test
  void groupRelative_zeroVarianceGroupGivesZerosNotNaN() {
    double[] a = Advantages.groupRelative(new double[] {0.1, 0.1, 0.1, 1, 1, 1}, 3, 0);

    assertThat(a).containsExactly(0, 0, 0, 0, 0, 0);
  }

  @Test
  void groupRelative_lengthNotAMultipleOfGroupSizeIsRejected() {
    assertThatThrownBy(() -> Advantages.groupRelative(new double[5], 2, 1e-6))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("rewards");
  }
}
