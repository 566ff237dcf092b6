package dev.ravel.workers.actor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * What a process on one node of the cluster sees, asked by the driver with a Ray task pinned to that node (its
 * {@code node:<address>} resource): the driver checks that the run folder it writes is the one every node reads.
 */
public final class NodeProbe {
  private NodeProbe() {}

  /**
   * The text of {@code path} on this node, or a line starting with {@code !} saying why it cannot be read; never
   * throws, so that the driver reports every node at once.
   */
  public static String read(String path) {
    try {
      return Files.readString(Path.of(path), StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      return "!no such file";
    } catch (IOException | RuntimeException e) {
      return "!" + e.getClass().getSimpleName() + ": " + e.getMessage();
    }
  }
}
