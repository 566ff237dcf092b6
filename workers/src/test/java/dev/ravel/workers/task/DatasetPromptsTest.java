package dev.ravel.workers.task;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class DatasetPromptsTest {
  @TempDir
  Path tmp;

  private Path prepared(int rows) throws IOException {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < rows; i++) {
      b.append("{\"prompt\":\"q").append(i).append("\",\"tokens\":[").append(i).append(",1],\"answer\":\"a")
          .append(i).append("\",\"metadata\":{\"i\":").append(i).append("},\"source\":\"t.jsonl:").append(i + 1)
          .append("\"}\n");
    }
    return Files.writeString(tmp.resolve("train.jsonl"), b.toString());
  }

  @Test
  void sample_eachEpochUsesEveryRowOnceInASeededOrder() throws IOException {
    DatasetPrompts d = DatasetPrompts.read(prepared(10));
    List<String> taken = new ArrayList<>();
    for (int step = 0; step < 5; step++) { // 5 steps of 4: epoch 0, then half of epoch 1
      d.sample(4, 7, step).forEach(p -> taken.add(p.prompt()));
    }
    Set<String> epoch0 = new HashSet<>(taken.subList(0, 10));
    Set<String> epoch1 = new HashSet<>(taken.subList(10, 20));
    assertThat(epoch0).hasSize(10);
    assertThat(epoch1).hasSize(10);
    assertThat(taken.subList(0, 10)).isNotEqualTo(taken.subList(10, 20)); // each epoch its own order
    assertThat(d.epochOf(4, 4)).isEqualTo(1);
    assertThat(d.epochsBegun(4, 5)).isEqualTo(2);
    assertThat(d.epochsBegun(4, 6)).isEqualTo(3); // rows 20..23: the third epoch has begun
    assertThat(d.epochsBegun(4, 0)).isZero();
  }

  @Test
  void sample_isTheSameForTheSameSeedAndStepWhereverItIsAsked() throws IOException {
    DatasetPrompts a = DatasetPrompts.read(prepared(10));
    DatasetPrompts b = DatasetPrompts.read(prepared(10));

    assertThat(b.sample(4, 7, 3)).isEqualTo(a.sample(4, 7, 3)); // a resumed run continues with the same rows
    assertThat(a.sample(4, 8, 3)).isNotEqualTo(a.sample(4, 7, 3));
  }

  @Test
  void encode_isTheRowsTokensAndMetadataTravelsWithTheProblem() throws IOException {
    DatasetPrompts d = DatasetPrompts.read(prepared(3));
    Problem p = d.rows().get(2);

    assertThat(d.encode(p)).containsExactly(2, 1);
    assertThat(p.answer()).isEqualTo("a2");
    assertThat(p.metadataJson()).isEqualTo("{\"i\":2}");
    assertThatThrownBy(() -> d.encode(new Problem("elsewhere", ""))).hasMessageContaining("not a prompt of this dataset");
  }

  @Test
  void read_aBadLineOrAnEmptyFileIsNamed() throws IOException {
    Path bad = Files.writeString(tmp.resolve("bad.jsonl"), "{\"prompt\":\"q\",\"tokens\":[1]}\n{\"prompt\":\"q\"}\n");
    assertThatThrownBy(() -> DatasetPrompts.read(bad)).hasMessage(bad + ":2: not a prepared prompt (prompt, tokens)");
    Path empty = Files.writeString(tmp.resolve("empty.jsonl"), "\n");
    assertThatThrownBy(() -> DatasetPrompts.read(empty)).hasMessage(empty + ": no prompts");
  }
}
