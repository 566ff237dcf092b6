package dev.ravel.driver.cli;

import dev.ravel.driver.grpo.Checkpoints;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.traces.RunTraces;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * A run folder claimed by the one driver writing it: a new run may not write into a folder that already holds a
 * run's records ({@code run.json}, {@code steps.jsonl}, checkpoints) unless it resumes that run, and while a
 * driver runs it holds {@code .driver.lock} in the folder, so a second driver with the same run id stops at once,
 * naming the first one's PID. Released (and the lock file removed) when the run ends; a killed driver's lock
 * dies with its process.
 */
final class RunLock implements AutoCloseable {
  /** The lock file in the run folder. */
  static final String FILE = ".driver.lock";
  private static final String KEY = "telemetry.run_id";

  private final Path file;
  private final FileChannel channel;
  private final FileLock lock;

  private RunLock(Path file, FileChannel channel, FileLock lock) {
    this.file = file;
    this.channel = channel;
    this.lock = lock;
  }

  /**
   * Claims {@code runDir} for run {@code runId}; {@code resume}: the run goes on in its own folder.
   *
   * @throws ConfigException naming {@code telemetry.run_id} when the folder holds another run's records, or a
   *     live driver holds it
   */
  static RunLock claim(Path runDir, String runId, boolean resume) {
    if (!resume) {
      for (String record : List.of(RunRecord.FILE, RunTraces.STEP_LOG_FILE, Checkpoints.folder(runDir).getFileName()
          .toString())) {
        if (Files.exists(runDir.resolve(record))) {
          throw new ConfigException(KEY, "run '" + runId + "' already has records in " + runDir + " (" + record
              + "): a new run needs its own id (leave telemetry.run_id unset for a fresh one), or go on with"
              + " --resume " + runId);
        }
      }
    }
    Path file = runDir.resolve(FILE);
    FileChannel ch = null;
    try {
      Files.createDirectories(runDir);
      ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
      FileLock lock;
      try {
        lock = ch.tryLock();
      } catch (OverlappingFileLockException e) {
        lock = null; // this JVM holds it already (a second run in one process)
      }
      if (lock == null) {
        String holder = Files.readString(file, StandardCharsets.UTF_8).strip();
        ch.close();
        throw new ConfigException(KEY, "run '" + runId + "' is running: its driver" + (holder.isEmpty() ? ""
            : " (pid " + holder + ")") + " holds " + file);
      }
      ch.truncate(0);
      ch.write(ByteBuffer.wrap(Long.toString(ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8)), 0);
      ch.force(false);
      return new RunLock(file, ch, lock);
    } catch (IOException e) {
      try {
        if (ch != null) {
          ch.close();
        }
      } catch (IOException ignored) {
        // the claim failed already; the close's failure adds nothing
      }
      throw new UncheckedIOException("cannot claim run folder " + runDir + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    try {
      Files.deleteIfExists(file); // before the release: no later driver ever sees this one's PID as holding it
      lock.release();
      channel.close();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot release " + file + ": " + e.getMessage(), e);
    }
  }
}
