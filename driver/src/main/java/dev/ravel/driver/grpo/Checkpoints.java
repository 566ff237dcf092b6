package dev.ravel.driver.grpo;

import dev.ravel.workers.model.ModelWeights;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Saves weights under {@code runs/<run-id>/checkpoints/}. */
final class Checkpoints {
  private Checkpoints() {}

  /** The folder checkpoints go to. */
  static Path folder(Path runDir) {
    return runDir.resolve("checkpoints");
  }

  static Path save(Path runDir, ModelWeights w) {
    Path dir = folder(runDir);
    Path file = dir.resolve("weights-v" + w.version() + ".bin");
    try {
      Files.createDirectories(dir);
      try (ObjectOutputStream out = new ObjectOutputStream(Files.newOutputStream(file))) {
        out.writeObject(w);
      }
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write checkpoint " + file, e);
    }
  }
}
