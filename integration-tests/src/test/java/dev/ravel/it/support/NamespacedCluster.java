package dev.ravel.it.support;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A Ray cluster of several real nodes on this machine, each in a network namespace of its own with an address of
 * its own ({@code scripts/cluster.sh}, as a user starts one): started once per test class, stopped by its own
 * PIDs, its namespaces deleted. Commands that talk to it run inside the head's namespace ({@link #command}).
 */
public final class NamespacedCluster implements AutoCloseable {
  /** The first three octets of the subnet the tests' clusters use (the script's default is another). */
  public static final String SUBNET = "10.231.9";
  /** The head's GCS port. */
  public static final int PORT = 6379;

  private final Path script;
  private final Path dir;
  private final Map<String, String> env;
  private final int nodes;

  private NamespacedCluster(Path script, Path dir, Map<String, String> env, int nodes) {
    this.script = script;
    this.dir = dir;
    this.env = env;
    this.nodes = nodes;
  }

  /**
   * Starts {@code nodes} nodes ({@code cluster.sh up}) and waits until all are alive; {@code options} are more
   * {@code up} options.
   */
  public static NamespacedCluster up(Path dir, int nodes, List<String> options) throws IOException,
      InterruptedException {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    Map<String, String> env = TestEnv.clean();
    env.put("RAVEL_CLUSTER_NAME", "ravelit");
    env.put("RAVEL_CLUSTER_DIR", dir.toString());
    env.put("RAVEL_CLUSTER_SUBNET", SUBNET);
    NamespacedCluster c = new NamespacedCluster(home.resolve("scripts/cluster.sh"), dir, env, nodes);
    List<String> args = new ArrayList<>(List.of("up", "--nodes", Integer.toString(nodes)));
    args.addAll(options);
    Result r = c.script(300, args);
    if (r.exitCode() != 0) {
      c.close();
      throw new IllegalStateException("cluster.sh up failed (" + r.exitCode() + "):\n" + r.output());
    }
    System.out.println("NamespacedCluster: " + r.output().strip());
    return c;
  }

  /** The address node {@code i} has in its namespace (0 is the head). */
  public String nodeIp(int i) {
    return SUBNET + "." + (i + 1);
  }

  public int nodes() {
    return nodes;
  }

  /** The environment the script runs with (the tests' clean one plus the cluster's name, folder and subnet). */
  public Map<String, String> env() {
    return Map.copyOf(env);
  }

  /**
   * A command line that runs {@code command} inside the head's namespace with {@code RAY_ADDRESS} set; each of
   * {@code privateDirs} is a fresh tmpfs that only this command sees.
   */
  public List<String> command(List<String> privateDirs, List<String> command) {
    List<String> cmd = new ArrayList<>(List.of(script.toString(), "exec"));
    for (String d : privateDirs) {
      cmd.add("--private-tmp");
      cmd.add(d);
    }
    cmd.add("--");
    cmd.addAll(command);
    return cmd;
  }

  /** SIGKILLs node {@code i}'s raylet ({@code cluster.sh kill-raylet}); returns the raylet's PID. */
  public long killRaylet(int i) throws IOException, InterruptedException {
    Result r = script(60, List.of("kill-raylet", Integer.toString(i)));
    if (r.exitCode() != 0) {
      throw new IllegalStateException("cluster.sh kill-raylet " + i + " failed:\n" + r.output());
    }
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)").matcher(r.output());
    long pid = -1;
    while (m.find()) {
      pid = Long.parseLong(m.group(1)); // the last number printed is the raylet's PID
    }
    return pid;
  }

  /**
   * SIGKILLs every process of node {@code i} ({@code cluster.sh kill-node}: its raylet, agents and workers), as when
   * its machine dies; returns how many processes were killed.
   */
  public int killNode(int i) throws IOException, InterruptedException {
    Result r = script(60, List.of("kill-node", Integer.toString(i)));
    if (r.exitCode() != 0) {
      throw new IllegalStateException("cluster.sh kill-node " + i + " failed:\n" + r.output());
    }
    return Integer.parseInt(r.output().strip().lines().reduce((a, b) -> b).orElse("0").strip());
  }

  /** {@code cluster.sh status}: its output and exit code (0 when every node is alive). */
  public Result status() throws IOException, InterruptedException {
    return script(60, List.of("status"));
  }

  /** Stops every node by its PID and deletes the namespaces ({@code cluster.sh down}). */
  @Override
  public void close() throws IOException, InterruptedException {
    Result r = script(180, List.of("down"));
    System.out.println("NamespacedCluster down (" + r.exitCode() + "): " + r.output().strip());
    if (r.exitCode() != 0) {
      throw new IllegalStateException("cluster.sh down failed:\n" + r.output());
    }
  }

  /** What a script command printed (stdout and stderr together) and its exit code. */
  public record Result(int exitCode, String output) {}

  private Result script(long timeoutSeconds, List<String> args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(script.toString()));
    cmd.addAll(args);
    Path out = Files.createTempFile(dir.getParent() == null ? dir : dir.getParent(), "cluster-", ".out");
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
      pb.environment().clear();
      pb.environment().putAll(env);
      Process p = pb.start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroy();
        p.waitFor(30, TimeUnit.SECONDS);
        throw new IllegalStateException("cluster.sh " + String.join(" ", args) + " did not finish in "
            + timeoutSeconds + " s:\n" + Files.readString(out, StandardCharsets.UTF_8));
      }
      return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
    }
  }
}
