package dev.ravel.driver.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.workers.grpo.GrpoConfig;
import dev.ravel.workers.grpo.GrpoTrainer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.trainer.TrainerStateFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class ResumeTest {
  private static final Map<String, Object> CONFIG = Map.of("grpo.steps", 10, "grpo.learning_rate", 0.03,
      "run.seed", 7, "telemetry.preset", "per_step", "cluster.num_cpus", 0);

  @TempDir
  Path runDir;

  /** A checkpoint after {@code step} steps, as TrainPhase writes it. */
  private void checkpoint(int step, Map<String, Object> config) {
    GrpoTrainer t = new GrpoTrainer(ModelWeights.init(ModelSpec.tiny(14), 1).withVersion(step), GrpoConfig.builder()
        .groupSize(2).build());
    Path dir = Checkpoints.stepFolder(runDir, step);
    Path file = TrainerStateFile.write(dir, t.state());
    Checkpoints.complete(runDir, dir, new Checkpoints.Meta(step, step, file.getFileName().toString(),
        t.weights().sha256(), config, Checkpoints.now()));
  }

  @Test
  void load_takesTheNewestCompleteCheckpointAndIgnoresAnUnfinishedOne() throws Exception {
    checkpoint(2, CONFIG);
    checkpoint(4, CONFIG);
    Files.createDirectories(Checkpoints.stepFolder(runDir, 6)); // its meta file was never written

    Resume r = Resume.load(runDir, "r1", CONFIG, 10);

    assertThat(r.completedSteps()).isEqualTo(4);
    assertThat(r.state().weights().version()).isEqualTo(4);
  }

  @Test
  void complete_keepsOnlyTheNewestThree() throws Exception {
    for (int step = 1; step <= 5; step++) {
      checkpoint(step, CONFIG);
    }
    try (var s = Files.list(Checkpoints.folder(runDir))) {
      assertThat(s.map(p -> p.getFileName().toString()).sorted().toList())
          .containsExactly("step-000003", "step-000004", "step-000005");
    }
  }

  @Test
  void load_noCheckpoint_namesResumeAndTheFolder() {
    assertThatThrownBy(() -> Resume.load(runDir, "r1", CONFIG, 10)).isInstanceOf(ConfigException.class)
        .hasMessageContaining("--resume").hasMessageContaining("run r1 has no complete checkpoint under "
            + Checkpoints.folder(runDir));
  }

  @Test
  void load_aChangedTrainingKey_isRejectedNamingIt_whileStepsClusterAndTelemetryMayChange() {
    checkpoint(4, CONFIG);
    Map<String, Object> changed = new java.util.HashMap<>(CONFIG);
    changed.put("grpo.learning_rate", 0.05);
    assertThatThrownBy(() -> Resume.load(runDir, "r1", changed, 10)).isInstanceOf(ConfigException.class)
        .hasMessageContaining("grpo.learning_rate").hasMessageContaining("is 0.05 here but was 0.03 in run r1");

    Map<String, Object> allowed = new java.util.HashMap<>(CONFIG);
    allowed.put("grpo.steps", 20);
    allowed.put("telemetry.preset", "default");
    allowed.put("cluster.num_cpus", 4);
    assertThat(Resume.load(runDir, "r1", allowed, 20).completedSteps()).isEqualTo(4);
  }

  @Test
  void load_allStepsDone_saysThereIsNothingToResume() {
    checkpoint(10, CONFIG);
    assertThatThrownBy(() -> Resume.load(runDir, "r1", CONFIG, 10)).hasMessageContaining("grpo.steps")
        .hasMessageContaining("has completed 10 steps already");
  }

  @Test
  void truncateStepLog_dropsTheStepsAfterTheCheckpointAndAHalfWrittenLine() throws Exception {
    checkpoint(2, CONFIG);
    Files.write(runDir.resolve(StepLog.FILE), List.of("{\"step\":1}", "{\"step\":2}", "{\"step\":3}", "{\"ste"));
    Resume r = Resume.load(runDir, "r1", CONFIG, 10);
    assertThat(r.truncateStepLog(runDir)).isEqualTo(2);
    assertThat(Files.readAllLines(runDir.resolve(StepLog.FILE))).containsExactly("{\"step\":1}", "{\"step\":2}");
  }
}
