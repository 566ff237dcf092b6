package dev.ravel.telemetry.process;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One process, named by its PID and its start time (field 22 of {@code /proc/PID/stat}, clock ticks since
 * boot): the one way Ravel and its tests record a process they will signal later. A PID alone does not name a
 * process for long ({@code pid_max} is 32768 on the machines Ravel runs on, and a Ray run starts dozens of
 * processes, so a PID is given to another process within minutes); with its start time it does.
 *
 * <p>Every signal is sent only after checking, right before it, that the PID still names the process
 * recorded (and the JDK's handle checks the start time once more as it signals). A process that has ended,
 * or whose PID now names another, is left alone: {@link #terminate} and {@link #kill} return {@code false}.
 * Immutable.
 */
public final class ProcessIdentity {
  private final long pid;
  private final String startTime;

  private ProcessIdentity(long pid, String startTime) {
    this.pid = pid;
    this.startTime = startTime;
  }

  /** The process {@code pid} names now, if one runs (and is not a zombie). */
  public static Optional<ProcessIdentity> of(long pid) {
    if (pid <= 0) {
      return Optional.empty();
    }
    return stat(pid).filter(s -> !s.zombie()).map(s -> new ProcessIdentity(pid, s.startTime()));
  }

  /** The process a handle names, if it still runs. */
  public static Optional<ProcessIdentity> of(ProcessHandle handle) {
    return of(handle.pid());
  }

  /** This process. */
  public static ProcessIdentity current() {
    return of(ProcessHandle.current().pid())
        .orElseThrow(() -> new IllegalStateException("cannot read this process's own /proc/self/stat"));
  }

  /**
   * A process recorded earlier as {@code pid} and {@code startTime} (as {@link #startTime()} gave them): it
   * is signalled only while the PID still names that process.
   *
   * @throws IllegalArgumentException if {@code pid} is not positive or {@code startTime} is blank
   */
  public static ProcessIdentity recorded(long pid, String startTime) {
    if (pid <= 0) {
      throw new IllegalArgumentException("pid: must be positive (got " + pid + ")");
    }
    if (startTime == null || startTime.isBlank()) {
      throw new IllegalArgumentException("startTime of pid " + pid + ": must not be blank");
    }
    return new ProcessIdentity(pid, startTime.trim());
  }

  /** Each live descendant of {@code handle}, as it is now (children before their own children). */
  public static List<ProcessIdentity> descendants(ProcessHandle handle) {
    return handle.descendants().map(ProcessIdentity::of).flatMap(Optional::stream).toList();
  }

  public long pid() {
    return pid;
  }

  /** Field 22 of {@code /proc/PID/stat} when this process was recorded. */
  public String startTime() {
    return startTime;
  }

  /** Whether the PID still names this process and it has not ended (a zombie has). */
  public boolean isAlive() {
    return stat(pid).map(s -> !s.zombie() && s.startTime().equals(startTime)).orElse(false);
  }

  /** A handle on this process, only while the PID still names it. */
  public Optional<ProcessHandle> handle() {
    if (!isAlive()) {
      return Optional.empty();
    }
    Optional<ProcessHandle> h = ProcessHandle.of(pid);
    // the handle took its own start time as it was made: check once more that it is still ours
    return h.isPresent() && isAlive() ? h : Optional.empty();
  }

  /** SIGTERM, if the PID still names this process; whether it was sent. */
  public boolean terminate() {
    return handle().map(ProcessHandle::destroy).orElse(false);
  }

  /** SIGKILL, if the PID still names this process; whether it was sent. */
  public boolean kill() {
    return handle().map(ProcessHandle::destroyForcibly).orElse(false);
  }

  /**
   * Waits until this process has ended (or its PID names another), checking every 50 ms, for at most
   * {@code timeoutMs}; whether it ended.
   */
  public boolean awaitExit(long timeoutMs) {
    long deadline = System.nanoTime() + Math.max(0, timeoutMs) * 1_000_000L;
    while (isAlive()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return !isAlive();
      }
    }
    return true;
  }

  /** SIGTERM, up to {@code graceMs} to exit, then SIGKILL (each only while the PID names this process). */
  public boolean stop(long graceMs) {
    terminate();
    if (awaitExit(graceMs)) {
      return true;
    }
    kill();
    return awaitExit(graceMs);
  }

  private record Stat(String state, String startTime) {
    boolean zombie() {
      return state.equals("Z") || state.equals("X");
    }
  }

  private static Optional<Stat> stat(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", String.valueOf(pid), "stat"));
      // the command name (field 2) is in parentheses and may hold spaces: count from after its last ')'
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
      return f.length > 19 ? Optional.of(new Stat(f[0], f[19])) : Optional.empty();
    } catch (IOException | RuntimeException e) {
      return Optional.empty(); // ended (ENOENT, or ESRCH while being read)
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ProcessIdentity p && p.pid == pid && p.startTime.equals(startTime);
  }

  @Override
  public int hashCode() {
    return Objects.hash(pid, startTime);
  }

  @Override
  public String toString() {
    return "pid " + pid + " (started at tick " + startTime + ")";
  }
}
