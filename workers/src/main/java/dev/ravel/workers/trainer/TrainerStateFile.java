package dev.ravel.workers.trainer;

import dev.ravel.workers.grpo.TrainerState;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** A Java trainer's checkpoint file: its {@link TrainerState}, written to a temporary file, then renamed. */
public final class TrainerStateFile {
  /** The file name of the state of weight version {@code version}. */
  public static String name(long version) {
    return "trainer-v" + version + ".bin";
  }

  private TrainerStateFile() {}

  /** Writes {@code state} under {@code dir} (created if missing) atomically; returns the file. */
  public static Path write(Path dir, TrainerState state) {
    Path file = dir.resolve(name(state.weights().version()));
    try {
      Files.createDirectories(dir);
      Path tmp = Files.createTempFile(dir, file.getFileName().toString(), ".tmp");
      try (OutputStream o = Files.newOutputStream(tmp); ObjectOutputStream out = new ObjectOutputStream(o)) {
        out.writeObject(state);
      }
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write checkpoint " + file + ": " + e.getMessage(), e);
    }
  }

  /** Reads a state written by {@link #write}; the error names the file. */
  public static TrainerState read(Path file) {
    try (InputStream i = Files.newInputStream(file); ObjectInputStream in = new ObjectInputStream(i)) {
      return (TrainerState) in.readObject();
    } catch (IOException | ClassNotFoundException | ClassCastException e) {
      throw new IllegalArgumentException(file + ": not a readable trainer checkpoint (" + e + ")", e);
    }
  }
}
