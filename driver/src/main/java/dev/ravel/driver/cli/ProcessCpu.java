package dev.ravel.driver.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * CPU time of whole process trees, read from {@code /proc/<pid>/stat}: for each live process of the trees its
 * user and system time plus the time of its children that have ended and been waited for (fields 14-17), so a
 * Ray worker that exited and was reaped by its raylet still counts, in the raylet's children's time. The
 * benchmarks read it around a window of a run (the processes of a local Ray head and of a driver) to report CPU
 * seconds per step, which the machine's load cannot stretch the way it stretches wall-clock time.
 */
final class ProcessCpu {
  /** Linux reports these fields in clock ticks of USER_HZ, 100 a second on every architecture Ravel runs on. */
  static final long TICK_NANOS = 10_000_000L;

  private ProcessCpu() {}

  /** A reading: CPU seconds of the trees, and how many processes were read. */
  record Reading(double seconds, int processes) {}

  /** Reads the trees rooted at {@code roots} (each root and all of its live descendants). */
  static Reading read(Collection<ProcessHandle> roots) {
    Set<Long> pids = new LinkedHashSet<>();
    for (ProcessHandle root : roots) {
      if (root.isAlive()) {
        pids.add(root.pid());
        root.descendants().forEach(d -> pids.add(d.pid()));
      }
    }
    long ticks = 0;
    int read = 0;
    for (long pid : pids) {
      long t = ticks(pid);
      if (t >= 0) {
        ticks += t;
        read++;
      }
    }
    return new Reading(ticks * TICK_NANOS / 1e9, read);
  }

  /** utime + stime + cutime + cstime of {@code pid}, in ticks; -1 when the process is gone. */
  static long ticks(long pid) {
    try {
      return parseTicks(Files.readString(Path.of("/proc", Long.toString(pid), "stat")));
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** User plus system CPU time of {@code pid} alone (not its children), in ns; -1 when the process is gone. */
  static long ownNanos(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
      return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * TICK_NANOS;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** The four CPU fields of one {@code /proc/<pid>/stat} line, summed (the command name may hold spaces). */
  static long parseTicks(String stat) {
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
    // after the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17): indexes 11..14 here
    return Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]);
  }
}
