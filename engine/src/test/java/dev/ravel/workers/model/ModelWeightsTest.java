package dev.ravel.workers.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import org.junit.jupiter.api.Test;

final class ModelWeightsTest {
  private static final ModelSpec SPEC = ModelSpec.tiny(14);

  @Test
  void serialization_roundTripKeepsSpecVersionAndEveryParameter() throws Exception {
    ModelWeights w = ModelWeights.init(SPEC, 42).withVersion(17);

    ModelWeights back = (ModelWeights) deserialize(serialize(w));

    assertThat(back.spec()).isEqualTo(SPEC);
    assertThat(back.version()).isEqualTo(17);
    assertThat(back.params()).containsExactly(w.params());
  }

  @Test
  void serialization_isAboutFourBytesPerParameter() throws Exception {
    ModelWeights w = ModelWeights.init(SPEC, 42);

    assertThat(serialize(w).length).isLessThan(4 * SPEC.parameterCount() + 1024);
  }

  @Test
  void deserialization_rejectsParametersThatDoNotFitTheSpec() throws Exception {
    byte[] good = serialize(ModelWeights.init(ModelSpec.builder().vocabSize(6).contextTokens(3).embedDim(4)
        .hiddenDim(5).build(), 1));
    byte[] bad = good.clone();
    // the hidden size 5 is stored as the int 0x00000005 right after the embed size 4; make it 6
    int at = indexOf(bad, new byte[] {0, 0, 0, 4, 0, 0, 0, 5});
    assertThat(at).isNotNegative();
    bad[at + 7] = 6;

    assertThatThrownBy(() -> deserialize(bad)).isInstanceOf(java.io.InvalidObjectException.class)
        .hasMessageContaining("params");
  }

  @Test
  void init_isDeterministicPerSeed() {
    assertThat(ModelWeights.init(SPEC, 3).params()).containsExactly(ModelWeights.init(SPEC, 3).params());
    assertThat(ModelWeights.init(SPEC, 3).params()).isNotEqualTo(ModelWeights.init(SPEC, 4).params());
  }

  @Test
  void init_freshModelIsCloseToUniform() {
    TinyLm lm = TinyLm.of(ModelWeights.init(SPEC, 3));

    float lp = Sampling.logProb(lm.logits(new int[] {1, 10, 2, 12}, 4), 3, 1);

    assertThat((double) lp).isCloseTo(-Math.log(14), org.assertj.core.data.Offset.offset(0.3));
  }

  @Test
  void withVersion_sharesParametersUnderTheNewVersion() {
    ModelWeights w = ModelWeights.init(SPEC, 3);

    ModelWeights v5 = w.withVersion(5);

    assertThat(v5.version()).isEqualTo(5);
    assertThat(w.version()).isZero();
    assertThat(v5.params()).isSameAs(w.params());
  }

  @Test
  void of_wrongLengthNamesParams() {
    assertThatThrownBy(() -> ModelWeights.of(SPEC, 0, new float[3]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("params");
  }

  @Test
  void of_nonFiniteParameterIsRejectedWithItsIndex() {
    float[] p = new float[SPEC.parameterCount()];
    p[9] = Float.NaN;

    assertThatThrownBy(() -> ModelWeights.of(SPEC, 0, p))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("params[9]");
  }

  private static byte[] serialize(Object o) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(o);
    }
    return bytes.toByteArray();
  }

  private static Object deserialize(byte[] b) throws IOException, ClassNotFoundException {
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(b))) {
      return in.readObject();
    }
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
