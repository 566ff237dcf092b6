package dev.ravel.driver.session;

import dev.ravel.workers.actor.NodeProbe;
import io.ray.api.ObjectRef;
import io.ray.api.Ray;
import io.ray.api.runtimecontext.NodeInfo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The run folder must be the same folder on every node of a cluster the driver did not start: actors write their
 * span files, checkpoints and state there, and the driver reads them. A file the driver writes is read back by a
 * task on each alive node; a node that does not see it stops the run at start, in one line.
 */
final class RunsDirCheck {
  /** A task of a Java worker that starts on a loaded node: the JVM and Ray's worker start-up. */
  private static final int TASK_TIMEOUT_MS = 120_000;
  /** A tiny share of a node's own resource, which pins the task to that node without holding its CPUs. */
  private static final double NODE_SHARE = 0.001;

  private RunsDirCheck() {}

  /**
   * Checks {@code dir} on every alive node of the connected cluster.
   *
   * @throws IllegalStateException one line naming the folder, each node that does not see it and why
   */
  static void verify(Path dir) {
    List<NodeInfo> nodes = Ray.getRuntimeContext().getAllNodeInfo().stream().filter(n -> n.isAlive)
        .sorted(Comparator.comparing((NodeInfo n) -> n.nodeAddress)).toList(); // one order in the message
    String token = "ravel-runs-dir-check " + UUID.randomUUID();
    Path probe = dir.resolve(".ravel-visible-" + UUID.randomUUID() + ".txt");
    try {
      Files.createDirectories(dir);
      Files.writeString(probe, token, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("telemetry.runs_dir: cannot write " + probe + ": " + e.getMessage(), e);
    }
    try {
      Map<String, ObjectRef<String>> reads = new LinkedHashMap<>();
      for (NodeInfo n : nodes) {
        reads.put(n.nodeAddress, Ray.task(NodeProbe::read, probe.toString())
            .setResource("node:" + n.nodeAddress, NODE_SHARE).remote());
      }
      List<String> blind = new ArrayList<>();
      for (Map.Entry<String, ObjectRef<String>> e : reads.entrySet()) {
        String seen = e.getValue().get(TASK_TIMEOUT_MS);
        if (!token.equals(seen)) {
          blind.add(e.getKey() + " (" + (seen.startsWith("!") ? seen.substring(1) : "another file there") + ")");
        }
      }
      if (!blind.isEmpty()) {
        throw new IllegalStateException(message(dir, blind, nodes.size()));
      }
    } finally {
      try {
        Files.deleteIfExists(probe);
      } catch (IOException e) {
        // a leftover probe file harms nothing
      }
    }
  }

  static String message(Path dir, List<String> blind, int nodes) {
    return "telemetry.runs_dir: " + dir + " is not visible on " + blind.size() + " of the cluster's " + nodes
        + " nodes: " + String.join(", ", blind) + "; every node must see the run folder (shared storage)";
  }
}
