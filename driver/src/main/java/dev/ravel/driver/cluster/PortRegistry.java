package dev.ravel.driver.cluster;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ports given to the Ray heads that Ravel started on this machine in the last minutes, kept in a file under a
 * file lock, so that two heads starting at once (two runs, two test JVMs) never both pick a port that is free at the
 * moment each looks, before either has bound it. A port found free is given only when no head was given it within
 * {@link #HOLD}, longer than a head takes to bind its ports. A folder where the file cannot be written leaves only
 * the free-port check, as before.
 */
final class PortRegistry {
  /** How long a port given to a head stays out of other heads' picks: far longer than {@code ray start} binds in. */
  static final Duration HOLD = Duration.ofMinutes(3);
  private static final Logger LOG = LoggerFactory.getLogger(PortRegistry.class);
  /** One lock per JVM besides the file's (a JVM may not hold two locks of one file: OverlappingFileLockException). */
  private static final Object IN_PROCESS = new Object();

  private final Path file;
  private final Duration hold;
  private final int min;
  private final int max;
  private final Clock clock;

  PortRegistry(Path file, Duration hold, int min, int max, Clock clock) {
    this.file = Objects.requireNonNull(file, "file");
    this.hold = Objects.requireNonNull(hold, "hold");
    this.min = min;
    this.max = max;
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** This machine's registry for this user: {@code ravel-ports-<user>} in the JVM's temp folder. */
  static PortRegistry machine(int min, int max) {
    String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9_.-]", "_");
    return new PortRegistry(Path.of(System.getProperty("java.io.tmpdir")).resolve("ravel-ports-" + user), HOLD, min,
        max, Clock.systemUTC());
  }

  /**
   * {@code n} distinct ports of {@code [min, max)}, each free now, not in {@code taken} and not given within the
   * hold; recorded as given now.
   */
  List<Integer> reserve(int n, Set<Integer> taken) {
    synchronized (IN_PROCESS) {
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
          StandardOpenOption.WRITE); FileLock lock = ch.lock()) {
        long now = clock.millis();
        Map<Integer, Long> given = read(ch, now - hold.toMillis());
        Set<Integer> out = new HashSet<>(taken);
        out.addAll(given.keySet());
        List<Integer> ports = pick(n, out);
        ports.forEach(p -> given.put(p, now));
        write(ch, given);
        return ports;
      } catch (IOException e) {
        LOG.debug("port registry {} not usable ({}); picking free ports without it", file, e.toString());
        return pick(n, new HashSet<>(taken));
      }
    }
  }

  private List<Integer> pick(int n, Set<Integer> out) {
    List<Integer> ports = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int p = -1;
      for (int attempt = 0; attempt < 200 && p < 0; attempt++) {
        int candidate = LocalRayHead.freePort(min, max);
        if (out.add(candidate)) {
          p = candidate;
        }
      }
      if (p < 0) {
        throw new IllegalStateException("no port between " + min + " and " + max + " is free and not given to"
            + " another Ray head in the last " + hold.toMinutes() + " min (" + file + ")");
      }
      ports.add(p);
    }
    return ports;
  }

  /** The ports given after {@code since} (epoch ms); lines that do not parse are dropped. */
  private static Map<Integer, Long> read(FileChannel ch, long since) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate((int) Math.min(ch.size(), 1 << 20));
    ch.read(buf, 0);
    Map<Integer, Long> given = new LinkedHashMap<>();
    for (String line : new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII).split("\n")) {
      String[] f = line.trim().split(" ");
      if (f.length == 2) {
        try {
          long at = Long.parseLong(f[1]);
          if (at > since) {
            given.put(Integer.parseInt(f[0]), at);
          }
        } catch (NumberFormatException torn) {
          // a line of another writer's format: not a port given
        }
      }
    }
    return given;
  }

  private static void write(FileChannel ch, Map<Integer, Long> given) throws IOException {
    StringBuilder s = new StringBuilder();
    given.forEach((p, at) -> s.append(p).append(' ').append(at).append('\n'));
    ch.truncate(0);
    ch.write(ByteBuffer.wrap(s.toString().getBytes(StandardCharsets.US_ASCII)), 0);
  }
}
