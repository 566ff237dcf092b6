package dev.ravel.it.support;

import dev.ravel.telemetry.process.ProcessIdentity;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/** This machine's processes as {@code /proc} shows them: to find a head's processes by PID and process group. */
public final class Procs {
  private Procs() {}

  /** A live (not zombie) process. */
  public record Proc(long pid, long ppid, long pgid) {}

  /** Every live process. */
  public static List<Proc> all() throws IOException {
    List<Proc> out = new ArrayList<>();
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : procs.filter(x -> x.getFileName().toString().matches("\\d+")).toList()) {
        try {
          String stat = Files.readString(p.resolve("stat"));
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          if (!f[0].equals("Z")) {
            out.add(new Proc(Long.parseLong(p.getFileName().toString()), Long.parseLong(f[1]), Long.parseLong(f[2])));
          }
        } catch (NoSuchFileException e) {
          // ended meanwhile
        } catch (IOException e) {
          // ended while its stat was read (ESRCH, "No such process"): it is not alive either
        }
      }
    }
    return out;
  }

  /** The live processes below {@code root}. */
  public static List<Long> descendants(long root) throws IOException {
    List<Proc> all = all();
    Map<Long, Long> parent = new HashMap<>();
    all.forEach(p -> parent.put(p.pid(), p.ppid()));
    List<Long> out = new ArrayList<>();
    for (Proc proc : all) {
      long p = proc.ppid();
      for (int depth = 0; depth < 64 && p > 1; depth++) {
        if (p == root) {
          out.add(proc.pid());
          break;
        }
        p = parent.getOrDefault(p, 1L);
      }
    }
    return out;
  }

  /** The live processes of process group {@code pgid}. */
  public static List<Long> group(long pgid) throws IOException {
    return all().stream().filter(p -> p.pgid() == pgid).map(Proc::pid).toList();
  }

  /** Those of {@code pids} that are still alive. */
  public static List<Long> alive(List<Long> pids) throws IOException {
    List<Long> live = all().stream().map(Proc::pid).toList();
    return pids.stream().filter(live::contains).toList();
  }

  /**
   * A process's start time (field 22 of {@code /proc/PID/stat}, clock ticks since boot), if it still runs: with
   * its PID it names one process, where the PID alone may since have been given to another.
   */
  public static Optional<String> startTime(long pid) {
    return ProcessIdentity.of(pid).map(ProcessIdentity::startTime);
  }

  /**
   * A handle on the process {@code pid} names, only while it is still the one started at {@code startTime} (as
   * {@link #startTime} read it when the PID was recorded): the one way the tests signal a PID they recorded
   * earlier, since {@code pid_max} is small and a PID is given to another process within minutes (see
   * {@link ProcessIdentity}, which Ravel itself uses). The JDK's handle then checks that start time again on
   * each signal.
   */
  public static Optional<ProcessHandle> same(long pid, String startTime) {
    if (pid <= 0 || startTime == null || startTime.isBlank()) {
      return Optional.empty();
    }
    return ProcessIdentity.recorded(pid, startTime).handle();
  }

  /** A process's command line (arguments joined by spaces), if it still runs. */
  public static Optional<String> cmdline(long pid) throws IOException {
    return read(pid, "cmdline", ' ');
  }

  /** A process's environment, one {@code NAME=value} a line, if it still runs. */
  public static Optional<String> environ(long pid) throws IOException {
    return read(pid, "environ", '\n');
  }

  private static Optional<String> read(long pid, String file, char separator) throws IOException {
    try {
      byte[] b = Files.readAllBytes(Path.of("/proc", String.valueOf(pid), file));
      return Optional.of(new String(b, StandardCharsets.UTF_8).replace('\0', separator));
    } catch (java.nio.file.FileSystemException e) {
      return Optional.empty(); // ended meanwhile, a kernel thread, or not ours to read (pid 1 of a sandbox)
    } catch (IOException e) {
      // a process that ends while its file is read fails the read with ESRCH ("No such process"): it is gone
      if ("No such process".equals(e.getMessage()) || !Files.exists(Path.of("/proc", String.valueOf(pid)))) {
        return Optional.empty();
      }
      throw e;
    }
  }
}
