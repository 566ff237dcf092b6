package dev.ravel.workers.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

final class ModelSpecTest {
  @Test
  void parameterCount_coversEmbeddingsWithPadRowHiddenAndOutputLayers() {
    ModelSpec s = ModelSpec.builder().vocabSize(6).contextTokens(3).embedDim(4).hiddenDim(5).build();

    // (6 + 1) * 4 embeddings + 5 * 12 W1 + 5 b1 + 6 * 5 W2 + 6 b2
    assertThat(s.parameterCount()).isEqualTo(28 + 60 + 5 + 30 + 6);
  }

  @Test
  void tiny_seesAWholeArithmeticPrompt() {
    ModelSpec s = ModelSpec.tiny(14);

    assertThat(s.vocabSize()).isEqualTo(14);
    assertThat(s.contextTokens()).isGreaterThanOrEqualTo("9+9=".length());
  }

  @ParameterizedTest
  @CsvSource({"vocabSize, 1, 4, 16, 64", "contextTokens, 14, 0, 16, 64", "embedDim, 14, 4, 0, 64",
      "hiddenDim, 14, 4, 16, 0"})
  void build_invalidValueNamesTheField(String field, int vocab, int context, int embed, int hidden) {
    assertThatThrownBy(() -> ModelSpec.builder().vocabSize(vocab).contextTokens(context).embedDim(embed)
        .hiddenDim(hidden).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith(field);
  }

  @Test
  void build_tooManyParametersIsRejected() {
    assertThatThrownBy(() -> ModelSpec.builder().vocabSize(1 << 20).hiddenDim(1 << 12).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("parameterCount");
  }

  @Test
  void equals_comparesValues() {
    assertThat(ModelSpec.tiny(14)).isEqualTo(ModelSpec.tiny(14)).hasSameHashCodeAs(ModelSpec.tiny(14));
    assertThat(ModelSpec.tiny(14)).isNotEqualTo(ModelSpec.tiny(15));
  }
}
