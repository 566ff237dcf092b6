package dev.ravel.workers.model;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;

/**
 * {@link ModelWeights} on disk: a magic header line, then the weights in Java serialization. This is the
 * file a generation worker hands to an inference server to load ({@code lora_path} of vLLM's
 * {@code /v1/load_lora_adapter} route, which {@code ravel serve} accepts) and the format of checkpoints.
 * Written atomically: a reader sees the old file or the whole new one, never a part.
 */
public final class WeightsFile {
  private static final byte[] MAGIC = "RAVEL-WEIGHTS 1\n".getBytes(StandardCharsets.US_ASCII);

  private WeightsFile() {}

  /**
   * Writes {@code weights} to {@code file}: to a temporary file in the same folder, then renamed over
   * {@code file} (atomically where the file system allows). Creates the folder if needed.
   *
   * @throws UncheckedIOException naming the file when it cannot be written
   */
  public static Path write(Path file, ModelWeights weights) {
    if (weights == null) {
      throw new IllegalArgumentException("weights: required");
    }
    Path dir = file.toAbsolutePath().getParent();
    Path tmp = null;
    try {
      Files.createDirectories(dir);
      tmp = Files.createTempFile(dir, "." + file.getFileName(), ".tmp");
      try (OutputStream raw = new BufferedOutputStream(Files.newOutputStream(tmp))) {
        raw.write(MAGIC);
        ObjectOutputStream out = new ObjectOutputStream(raw);
        out.writeObject(weights);
        out.flush();
      }
      try {
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
      }
      return file;
    } catch (IOException e) {
      if (tmp != null) {
        try {
          Files.deleteIfExists(tmp);
        } catch (IOException ignored) {
          // the write already failed; that error is the one to report
        }
      }
      throw new UncheckedIOException("cannot write weights file " + file + ": " + e.getMessage(), e);
    }
  }

  /**
   * Reads the weights in {@code file}.
   *
   * @throws IllegalArgumentException naming the file when it is missing, not a weights file, or corrupt
   */
  public static ModelWeights read(Path file) {
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file))) {
      byte[] head = in.readNBytes(MAGIC.length);
      if (!Arrays.equals(head, MAGIC)) {
        throw new IllegalArgumentException("weights file " + file + ": not a Ravel weights file (bad header)");
      }
      Object o = new ObjectInputStream(in).readObject();
      if (!(o instanceof ModelWeights w)) {
        throw new IllegalArgumentException("weights file " + file + ": holds " + o.getClass().getName()
            + ", not ModelWeights");
      }
      return w;
    } catch (IOException | ClassNotFoundException e) {
      throw new IllegalArgumentException("weights file " + file + ": cannot be read (" + e + ")", e);
    }
  }
}
