package dev.ravel.workers.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

final class CharTokenizerTest {
  private final CharTokenizer tok = CharTokenizer.arithmetic();

  @Test
  void arithmetic_hasDigitsOperatorsAndEosLast() {
    assertThat(tok.vocabSize()).isEqualTo(14);
    assertThat(tok.eos()).isEqualTo(13);
    assertThat(tok.encode("0123456789+-=")).containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
  }

  @Test
  void decode_invertsEncodeAndDropsEos() {
    int[] ids = tok.encode("7+8=5");
    int[] withEos = java.util.Arrays.copyOf(ids, ids.length + 1);
    withEos[ids.length] = tok.eos();

    assertThat(tok.decode(withEos, 0, withEos.length)).isEqualTo("7+8=5");
    assertThat(tok.decode(withEos, 4, withEos.length)).isEqualTo("5");
  }

  @Test
  void encode_unknownCharacterIsNamedWithItsIndex() {
    assertThatThrownBy(() -> tok.encode("3*4="))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'*'")
        .hasMessageContaining("index 1");
  }

  @Test
  void decode_idOutsideVocabularyIsRejected() {
    assertThatThrownBy(() -> tok.decode(new int[] {1, 14}, 0, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tokens[1] = 14");
  }

  @Test
  void of_duplicateCharacterIsRejected() {
    assertThatThrownBy(() -> CharTokenizer.of("abca"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("alphabet")
        .hasMessageContaining("'a'");
  }
}
