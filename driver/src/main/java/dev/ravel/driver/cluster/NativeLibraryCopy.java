package dev.ravel.driver.cluster;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes the copies of Ray's native core worker library that Ray leaves behind, about 40 MB each.
 * {@code Ray.init()} in a Java driver copies {@value #LIBRARY} into a folder of its own under Ray's temp folder
 * ({@code /tmp/ray/<milliseconds>/}), loads it, and never removes it; the Java workers of a head load a copy in the
 * head's session folder, which stays when the head stops. Every driver process (each {@code ravel} command, each
 * test) and every head left 40 MB, and a few hundred filled a disk. A loaded library's file is no longer needed
 * (the process keeps its mapping): the driver's session removes its copy right after {@code Ray.init()}
 * ({@link #removeOwn()}), and a head that Ravel started removes its session's copy once it has stopped
 * ({@link #removeSessionCopy(Path)}), keeping the session's logs.
 *
 * <p>Two drivers that start in the same millisecond share one folder. Ray copies the library under an exclusive
 * lock on the folder's {@code file_lock}, so the removal takes that lock too and leaves the folder when it cannot;
 * what remains is a window of a few milliseconds after another such driver's copy and before its load, which its
 * library load happens early in (long before this driver's {@code Ray.init()} returns).
 */
public final class NativeLibraryCopy {
  /** The library Ray's Java runtime copies and loads. */
  static final String LIBRARY = "libcore_worker_library_java.so";

  private static final Set<String> REMOVABLE = Set.of(LIBRARY, "file_lock");
  /** {@code ray start}'s line that names the session folder, in a head's log. */
  private static final Pattern SESSION = Pattern.compile("(/\\S*/session_[0-9_-]+)/logs/");
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
      Path parent = folder == null ? null : folder.getParent();
      // Ray's temp folder (/tmp/ray or another named ray) and a folder named by the copy's time alone
      if (parent != null && parent.getFileName() != null && parent.getFileName().toString().equals("ray")
          && folder.getFileName().toString().matches("[0-9]+")) {
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
    // Ray's own lock on the copy: held by another driver copying into the same folder, the folder stays
    try (FileChannel lock = FileChannel.open(folder.resolve("file_lock"), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE); FileLock held = lock.tryLock()) {
      if (held == null) {
        return false;
      }
      Files.deleteIfExists(folder.resolve(LIBRARY));
      Files.deleteIfExists(folder.resolve("file_lock"));
    } catch (OverlappingFileLockException e) {
      return false;
    }
    Files.delete(folder);
    return true;
  }

  /**
   * The session folder that {@code ray start} named last among a head log's lines, if it named one.
   */
  static Optional<Path> sessionIn(List<String> headLogLines) {
    Optional<Path> last = Optional.empty();
    for (String line : headLogLines) {
      Matcher m = SESSION.matcher(line);
      if (m.find()) {
        last = Optional.of(Path.of(m.group(1)));
      }
    }
    return last;
  }

  /**
   * Removes the library's copy from the session folder of a stopped head whose {@code ray start} output is in
   * {@code headLog}; never fails (a copy left behind is logged).
   *
   * @param headLog the head's log file
   */
  static void removeSessionCopy(Path headLog) {
    try {
      if (headLog == null || !Files.isReadable(headLog)) {
        return;
      }
      Optional<Path> session = sessionIn(Files.readAllLines(headLog, StandardCharsets.ISO_8859_1));
      if (session.isPresent() && Files.deleteIfExists(session.get().resolve(LIBRARY))) {
        LOG.debug("removed Ray's native library copy in {}", session.get());
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("could not remove Ray's native library copy of the head logging to {}: {}", headLog, e.toString());
    }
  }

  /** Removes this driver process's copy, if it has one; never fails (a copy left behind is logged). */
  public static void removeOwn() {
    Path maps = Path.of("/proc/self/maps");
    if (!Files.isReadable(maps)) {
      return;
    }
    Optional<Path> folder = Optional.empty();
    try {
      folder = folderIn(Files.readAllLines(maps, StandardCharsets.ISO_8859_1));
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
