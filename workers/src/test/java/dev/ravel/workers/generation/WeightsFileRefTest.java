package dev.ravel.workers.generation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class WeightsFileRefTest {
  private static final String SHA = "ab".repeat(32);

  @Test
  void parse_whatPublishFileAnswers_isTheReferenceAndItsUpdateInfo() {
    WeightsFileRef ref = WeightsFileRef.parse("{\"path\": \"/runs/r/weights/weights-v3.safetensors\", \"sha256\": \""
        + SHA + "\", \"bytes\": 1234, \"version\": 3}");

    assertThat(ref).isEqualTo(new WeightsFileRef("/runs/r/weights/weights-v3.safetensors", SHA, 1234, 3));
    assertThat(ref.updateInfo()).containsOnlyKeys("path", "sha256", "bytes").containsEntry("bytes", 1234L);
  }

  @Test
  void parse_aFieldMissing_namesIt() {
    assertThatThrownBy(() -> WeightsFileRef.parse("{\"path\": \"/w\", \"sha256\": \"" + SHA + "\", \"version\": 3}"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no 'bytes'");
  }

  @Test
  void parse_notJson_saysSo() {
    assertThatThrownBy(() -> WeightsFileRef.parse("weights-v3"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not JSON");
  }

  @Test
  void new_aDigestThatIsNotSha256_isRefusedNamingTheFile() {
    assertThatThrownBy(() -> new WeightsFileRef("/w", "xyz", 1, 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("/w").hasMessageContaining("64 hex");
  }
}
