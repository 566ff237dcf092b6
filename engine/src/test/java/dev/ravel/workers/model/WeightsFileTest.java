package dev.ravel.workers.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WeightsFileTest {
  @TempDir Path dir;

  @Test
  void read_afterWrite_givesTheSameWeights() {
    ModelWeights w = ModelWeights.init(ModelSpec.tiny(14), 3).withVersion(5);
    Path f = WeightsFile.write(dir.resolve("sub/weights-v5.bin"), w);

    ModelWeights back = WeightsFile.read(f);

    assertThat(back.version()).isEqualTo(5);
    assertThat(back.spec()).isEqualTo(w.spec());
    assertThat(back.params()).containsExactly(w.params());
  }

  @Test
  void write_overAnExistingFile_replacesItAndLeavesNoTemporaryFile() throws Exception {
    Path f = dir.resolve("w.bin");
    WeightsFile.write(f, ModelWeights.init(ModelSpec.tiny(14), 1));
    WeightsFile.write(f, ModelWeights.init(ModelSpec.tiny(14), 2).withVersion(2));

    assertThat(WeightsFile.read(f).version()).isEqualTo(2);
    try (var files = Files.list(dir)) {
      assertThat(files).containsExactly(f);
    }
  }

  @Test
  void read_notAWeightsFile_namesTheFile() throws Exception {
    Path f = Files.writeString(dir.resolve("x.bin"), "hello");

    assertThatThrownBy(() -> WeightsFile.read(f)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(f.toString()).hasMessageContaining("not a Ravel weights file");
  }

  @Test
  void read_missingFile_namesTheFile() {
    Path f = dir.resolve("absent.bin");

    assertThatThrownBy(() -> WeightsFile.read(f)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(f.toString());
  }
}
