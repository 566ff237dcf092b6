package dev.ravel.driver.session;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes the copy of Ray's native core worker library that a Java driver leaves behind. {@code Ray.init()} in a
 * driver copies {@value #LIBRARY} (about 40 MB) into a folder of its own under Ray's temp folder
 * ({@code /tmp/ray/<nanoseconds>/}), loads it, and never removes it: every driver process (each {@code ravel}
 * command, each test) left 40 MB, and a few hundred filled a disk. Once the library is loaded its file is no
 * longer needed (the process keeps its mapping), so the session removes the copy right after {@code Ray.init()}.
 * Only a folder named by digits alone (not a Ray session's folder, which the workers' copies live in) that holds
 * nothing but the library and Ray's lock file is removed.
 */
final class NativeLibraryCopy {
  /** The library Ray's Java runtime copies and loads. */
  static final String LIBRARY = "libcore_worker_library_java.so";

  private static final Set<String> REMOVABLE = Set.of(LIBRARY, "file_lock");
  private static final Logger LOG = LoggerFactory.getLogger(NativeLibraryCopy.class);

  private NativeLibraryCopy() {}

  /**
   * The driver's own copy's folder among the lines of a {@code /proc/<pid>/maps}: the folder of a mapped
   * {@value #LIBRARY} whose name is digits alone.
   */
  static Optional<Path> folderIn(List<String> mapsLines) {
    for (String line : mapsLines) {
      int slash = line.indexOf('/');
      if (slash < 0 || !line.endsWith("/" + LIBRARY)) {
        continue;
      }
      Path folder = Path.of(line.substring(slash)).getParent();
      if (folder != null && folder.getFileName() != null && folder.getFileName().toString().matches("[0-9]+")) {
        return Optional.of(folder);
      }
    }
    return Optional.empty();
  }

  /**
   * Removes {@code folder} when it holds only the library and Ray's lock file; {@return whether it was removed}
   */
  static boolean remove(Path folder) throws IOException {
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(folder)) {
      for (Path p : entries) {
        if (!REMOVABLE.contains(p.getFileName().toString()) || !Files.isRegularFile(p)) {
          return false;
        }
      }
    }
    for (String name : REMOVABLE) {
      Files.deleteIfExists(folder.resolve(name));
    }
    Files.delete(folder);
    return true;
  }

  /** Removes this process's copy, if it has one; never fails (a copy left behind is logged). */
  static void removeOwn() {
    Path maps = Path.of("/proc/self/maps");
    if (!Files.isReadable(maps)) {
      return;
    }
    Optional<Path> folder = Optional.empty();
    try {
      folder = folderIn(Files.readAllLines(maps));
      if (folder.isPresent()) {
        boolean removed = remove(folder.get());
        LOG.debug("Ray's native library copy in {}: {}", folder.get(), removed ? "removed" : "kept (other files)");
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("could not remove Ray's native library copy {}: {}", folder.map(Path::toString).orElse("?"),
          e.toString());
    }
  }
}
