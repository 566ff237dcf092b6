package dev.ravel.workers.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import org.junit.jupiter.api.Test;

final class TrajectoryTest {
  @Test
  void serialization_roundTripIsEqual() throws Exception {
    Trajectory t = new Trajectory("req-3", new int[] {1, 10, 2, 12}, new int[] {3, 13}, new float[] {-0.5f, -1.2f},
        1.0, 4, 2);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(t);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      assertThat(in.readObject()).isEqualTo(t);
    }
  }

  @Test
  void constructor_copiesArraysSoCallersCannotChangeIt() {
    int[] completion = {3, 13};
    Trajectory t = new Trajectory("r", new int[] {1}, completion, new float[] {-1f, -1f}, 0, 0, 0);

    completion[0] = 7;
    t.completion()[1] = 7;

    assertThat(t.completion()).containsExactly(3, 13);
    assertThat(t.sequence()).containsExactly(1, 3, 13);
  }

  @Test
  void constructor_logprobsMustMatchTheCompletion() {
    assertThatThrownBy(() -> new Trajectory("r", new int[] {1}, new int[] {3, 13}, new float[] {-1f}, 0, 0, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("logprobs");
    assertThatThrownBy(() -> new Trajectory("r", new int[] {1}, new int[] {3}, new float[] {0.5f}, 0, 0, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("logprobs[0]");
  }

  @Test
  void constructor_emptyCompletionAndNonFiniteRewardAreRejected() {
    assertThatThrownBy(() -> new Trajectory("r", new int[] {1}, new int[0], new float[0], 0, 0, 0))
        .hasMessageStartingWith("completion");
    assertThatThrownBy(() -> new Trajectory("r", new int[] {1}, new int[] {2}, new float[] {-1f}, Double.NaN, 0, 0))
        .hasMessageStartingWith("reward");
  }
}
