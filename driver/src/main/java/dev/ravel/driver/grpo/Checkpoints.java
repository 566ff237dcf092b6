package dev.ravel.driver.grpo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A run's checkpoints, under {@code runs/<run-id>/checkpoints/}: one folder per checkpoint,
 * {@code step-000006/}, holding the trainer's state file (weights and optimizer state, written by the trainer
 * with a temporary file and a rename) and {@link #META}, written last the same way. A folder without
 * {@link #META} is an interrupted write and is ignored; only the newest {@link #KEEP} complete ones are kept.
 */
public final class Checkpoints {
  /** The checkpoints kept: older ones are deleted once a newer one is complete. */
  static final int KEEP = 3;
  /** The file that makes a checkpoint folder complete. */
  static final String META = "checkpoint.json";
  /** The folder inside a checkpoint that a Python trainer of {@code model.path} writes with save_pretrained. */
  public static final String HF_FOLDER = "hf";
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private Checkpoints() {}

  /**
   * What a checkpoint is.
   *
   * @param step the steps the run had completed (a resumed run goes on with step {@code step + 1})
   * @param weightVersion the version of the saved weights
   * @param trainerFile the trainer's state file, relative to the checkpoint's folder
   * @param weightsSha256 the saved weights' digest (null for a Python trainer)
   * @param config the run's resolved config, to check a resumed run against
   * @param written when the checkpoint was complete
   */
  public record Meta(int step, long weightVersion, String trainerFile, String weightsSha256,
      Map<String, Object> config, String written) {}

  /** The folder checkpoints go to. */
  public static Path folder(Path runDir) {
    return runDir.resolve("checkpoints");
  }

  /** The folder of the checkpoint after {@code completedSteps} steps. */
  static Path stepFolder(Path runDir, int completedSteps) {
    return folder(runDir).resolve(String.format("step-%06d", completedSteps));
  }

  /** Completes the checkpoint in {@code dir}: its {@link #META}, atomically; then prunes older ones. */
  static void complete(Path runDir, Path dir, Meta meta) {
    Path file = dir.resolve(META);
    try {
      Path tmp = Files.createTempFile(dir, META, ".tmp");
      JSON.writeValue(tmp.toFile(), meta);
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write checkpoint " + file + ": " + e.getMessage(), e);
    }
    List<Path> complete = completeFolders(runDir);
    for (int i = 0; i < complete.size() - KEEP; i++) {
      delete(complete.get(i));
    }
  }

  /** The newest complete checkpoint of the run in {@code runDir}, with its folder. */
  public static Optional<Found> latest(Path runDir) {
    List<Path> complete = completeFolders(runDir);
    if (complete.isEmpty()) {
      return Optional.empty();
    }
    Path dir = complete.get(complete.size() - 1);
    try {
      return Optional.of(new Found(dir, JSON.readValue(dir.resolve(META).toFile(), Meta.class)));
    } catch (IOException e) {
      throw new UncheckedIOException(dir.resolve(META) + ": not a readable checkpoint: " + e.getMessage(), e);
    }
  }

  /** The complete checkpoint after {@code completedSteps} steps, if the run kept it. */
  public static Optional<Found> at(Path runDir, int completedSteps) {
    for (Path dir : completeFolders(runDir)) {
      if (dir.getFileName().toString().equals(stepFolder(runDir, completedSteps).getFileName().toString())) {
        try {
          return Optional.of(new Found(dir, JSON.readValue(dir.resolve(META).toFile(), Meta.class)));
        } catch (IOException e) {
          throw new UncheckedIOException(dir.resolve(META) + ": not a readable checkpoint: " + e.getMessage(), e);
        }
      }
    }
    return Optional.empty();
  }

  /** The steps of the run's complete checkpoints, oldest first. */
  public static List<Integer> steps(Path runDir) {
    return completeFolders(runDir).stream().map(p -> Integer.parseInt(p.getFileName().toString().substring(5))).toList();
  }

  /** A checkpoint found on disk. */
  public record Found(Path dir, Meta meta) {
    /** The trainer's state file. */
    public Path trainerFile() {
      return dir.resolve(meta.trainerFile());
    }

    /** The policy as a Hugging Face folder ({@code save_pretrained}): written for runs of {@code model.path}. */
    public Path huggingFaceFolder() {
      return dir.resolve(HF_FOLDER);
    }
  }

  /** Complete checkpoint folders, oldest first. */
  private static List<Path> completeFolders(Path runDir) {
    Path root = folder(runDir);
    if (!Files.isDirectory(root)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(root)) {
      return s.filter(p -> p.getFileName().toString().matches("step-\\d{6}") && Files.isRegularFile(p.resolve(META)))
          .sorted(Comparator.comparing(p -> p.getFileName().toString())).toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + root + ": " + e.getMessage(), e);
    }
  }

  private static void delete(Path dir) {
    try (Stream<Path> s = Files.walk(dir)) {
      List<Path> all = new ArrayList<>(s.toList());
      all.sort(Comparator.reverseOrder());
      for (Path p : all) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete old checkpoint " + dir + ": " + e.getMessage(), e);
    }
  }

  static String now() {
    return Instant.now().toString();
  }
}
