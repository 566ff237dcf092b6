package dev.ravel.driver.grpo;

import dev.ravel.driver.config.Keys;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.workers.grpo.TrainerState;
import dev.ravel.workers.trainer.TrainerStateFile;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Where a resumed run goes on from: its newest complete checkpoint and the trainer state in it. The run
 * continues in the same run folder, with the same run id, from the step after the checkpoint; its sampling
 * seeds derive from the run's seed and the step, so a resumed sync run repeats exactly what the run would
 * have done.
 *
 * @param checkpoint the checkpoint on disk
 * @param state the Java trainer's weights and optimizer state in it; null for a Python trainer, which reads its own
 *     state file ({@link #pythonStateFile()}: weights, AdamW state, optimizer steps, version)
 */
public record Resume(Checkpoints.Found checkpoint, TrainerState state) {
  /** Config keys a resumed run may change: how many steps, where it runs, how it is observed. */
  private static final Set<String> MAY_CHANGE_SECTIONS = Set.of("telemetry", Keys.ADDRESS.section());
  /**
   * Keys a resumed run may change: the steps, and where actors go (a run that lost a node goes on on the nodes
   * left; a trainer group's update is one trainer's, so its size may change too).
   */
  private static final Set<String> MAY_CHANGE_KEYS = Set.of(Keys.STEPS.dotted(), Keys.PLACEMENT.dotted(),
      Keys.GENERATION_NUM_CPUS.dotted(), Keys.GENERATION_RESOURCES.dotted(), Keys.TRAINER_WORKERS.dotted(),
      Keys.TRAINER_PLACEMENT.dotted(), Keys.TRAINER_NUM_CPUS.dotted(), Keys.TRAINER_RESOURCES.dotted());

  public Resume {
    Objects.requireNonNull(checkpoint, "checkpoint");
  }

  /** The version of the weights the checkpoint holds, the version the resumed run's workers serve first. */
  public long weightVersion() {
    return state != null ? state.weights().version() : checkpoint.meta().weightVersion();
  }

  /** A Python trainer's state file to go on from; null for a Java trainer's checkpoint. */
  public Path pythonStateFile() {
    return state == null ? checkpoint.trainerFile() : null;
  }

  /** The file beside a Python trainer's state file that holds its weights' digest. */
  static Path digestFile(Path stateFile) {
    return stateFile.resolveSibling(stateFile.getFileName() + ".sha256");
  }

  /**
   * Drops from the run's {@code steps.jsonl} and {@code samples.jsonl} the lines of steps after the checkpoint
   * (the interrupted attempt ran them, the resumed run runs them again), writing the kept lines to a temporary
   * file that replaces each. Returns the number of {@code steps.jsonl} lines dropped.
   */
  public int truncateStepLog(Path runDir) {
    truncate(runDir, dev.ravel.telemetry.runs.SampleRecord.FILE);
    return truncate(runDir, StepLog.FILE);
  }

  private int truncate(Path runDir, String name) {
    Path file = runDir.resolve(name);
    if (!java.nio.file.Files.isRegularFile(file)) {
      return 0;
    }
    com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
    try {
      java.util.List<String> kept = new java.util.ArrayList<>();
      java.util.List<String> lines = java.nio.file.Files.readAllLines(file);
      for (String line : lines) {
        if (line.isBlank()) {
          continue;
        }
        com.fasterxml.jackson.databind.JsonNode step;
        try {
          step = json.readTree(line).get("step");
        } catch (java.io.IOException e) {
          continue; // a line the killed driver did not finish
        }
        if (step != null && step.asInt() <= completedSteps()) {
          kept.add(line);
        }
      }
      Path tmp = java.nio.file.Files.createTempFile(runDir, name, ".tmp");
      java.nio.file.Files.write(tmp, kept);
      java.nio.file.Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE,
          java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      return lines.size() - kept.size();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("cannot rewrite " + file + ": " + e.getMessage(), e);
    }
  }

  /** The steps completed before the resume: the resumed run starts with the next one. */
  public int completedSteps() {
    return checkpoint.meta().step();
  }

  /**
   * The newest complete checkpoint in {@code runDir}, checked against the config the run is resumed with.
   *
   * @throws ConfigException naming {@code --resume} when there is none, or naming the first key whose value
   *     differs from the checkpoint's
   */
  public static Resume load(Path runDir, String runId, Map<String, Object> config, int steps) {
    Checkpoints.Found found = Checkpoints.latest(runDir).orElseThrow(() -> new ConfigException("--resume",
        "run " + runId + " has no complete checkpoint under " + Checkpoints.folder(runDir)
            + " (it is written every " + Keys.CHECKPOINT_EVERY + " steps and after the last)"));
    Map<String, Object> saved = found.meta().config();
    for (Map.Entry<String, Object> e : config.entrySet()) {
      String key = e.getKey();
      if (MAY_CHANGE_KEYS.contains(key) || MAY_CHANGE_SECTIONS.contains(key.substring(0, Math.max(0, key.indexOf('.'))))) {
        continue;
      }
      Object was = saved.get(key);
      if (!String.valueOf(was).equals(String.valueOf(e.getValue()))) {
        throw new ConfigException(key, "is " + e.getValue() + " here but was " + was + " in run " + runId
            + " (a resumed run keeps its config; only grpo.steps, where actors go (generation.placement,"
            + " generation.num_cpus, generation.resources, trainer.workers, trainer.placement, trainer.num_cpus,"
            + " trainer.resources), cluster.* and telemetry.* may change)");
      }
    }
    if (found.meta().step() >= steps) {
      throw new ConfigException(Keys.STEPS.dotted(), steps + ", but run " + runId + " has completed "
          + found.meta().step() + " steps already: nothing to resume (raise " + Keys.STEPS + " to train on)");
    }
    if (found.meta().weightsSha256() == null) {
      throw new ConfigException("--resume", "run " + runId + "'s checkpoint was written by a Python trainer of an"
          + " earlier Ravel, which kept no optimizer state: it cannot be resumed");
    }
    if (Keys.RUNTIME_PYTHON.equals(String.valueOf(config.get(Keys.TRAINER_RUNTIME.dotted())))) {
      Path file = found.trainerFile();
      String digest;
      try {
        digest = java.nio.file.Files.readString(digestFile(file)).trim();
      } catch (java.io.IOException e) {
        throw new ConfigException("--resume", "cannot read " + digestFile(file) + ": the checkpoint is damaged ("
            + e.getMessage() + ")");
      }
      if (!java.nio.file.Files.isRegularFile(file) || !digest.equals(found.meta().weightsSha256())) {
        throw new ConfigException("--resume", file + " is missing or does not hold the weights its checkpoint names"
            + " (digest differs): the checkpoint is damaged");
      }
      return new Resume(found, null);
    }
    TrainerState state = TrainerStateFile.read(found.trainerFile());
    if (!state.weights().sha256().equals(found.meta().weightsSha256())) {
      throw new ConfigException("--resume", found.trainerFile() + " does not hold the weights its checkpoint names"
          + " (digest differs): the checkpoint is damaged");
    }
    return new Resume(found, state);
  }
}
