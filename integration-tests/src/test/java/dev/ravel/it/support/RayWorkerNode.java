package dev.ravel.it.support;

import dev.ravel.driver.cluster.RayHome;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * A second Ray node on this machine, joined to a head on loopback ({@code ray start --address ... --block}
 * in its own session, every port explicit so that it does not collide with the head's), stopped by its own
 * process group's PIDs.
 */
public final class RayWorkerNode implements AutoCloseable {
  private final Process process;

  private RayWorkerNode(Process process) {
    this.process = process;
  }

  /** Starts a node of {@code numCpus} CPUs and the custom {@code resources} (JSON) joined to {@code headAddress}. */
  public static RayWorkerNode start(Map<String, String> env, String headAddress, int numCpus, String resources,
      Path log) throws IOException {
    Set<Integer> taken = new HashSet<>();
    List<String> cmd = new ArrayList<>(List.of("setsid", RayHome.locate(env).rayCommand().toString(), "start",
        "--address=" + headAddress, "--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
        "--num-cpus=" + numCpus, "--resources=" + resources,
        "--node-manager-port=" + free(taken), "--object-manager-port=" + free(taken),
        "--metrics-export-port=" + free(taken), "--runtime-env-agent-port=" + free(taken),
        "--dashboard-agent-listen-port=" + free(taken), "--dashboard-agent-grpc-port=" + free(taken)));
    int workers = 30002 + 1000 * (int) (Math.random() * 9);
    cmd.add("--min-worker-port=" + workers);
    cmd.add("--max-worker-port=" + (workers + 999));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    // as for the head: without it Ray replaces 127.0.0.1 by the host's interface address
    pb.environment().put("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0");
    return new RayWorkerNode(pb.start());
  }

  private static int free(Set<Integer> taken) throws IOException {
    for (int i = 0; i < 50; i++) {
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        if (taken.add(s.getLocalPort())) {
          return s.getLocalPort();
        }
      }
    }
    throw new IOException("no free port");
  }

  /** The node's {@code ray start} process; its session's processes are its process group. */
  public long pid() {
    return process.pid();
  }

  /** The node's raylet, once it runs. */
  public long rayletPid() throws IOException {
    for (long pid : Procs.group(process.pid())) {
      if (Procs.cmdline(pid).orElse("").contains("/raylet ")) {
        return pid;
      }
    }
    return -1;
  }

  @Override
  public void close() throws Exception {
    List<Long> group = new ArrayList<>(Procs.group(process.pid()));
    process.destroy();
    process.waitFor(20, TimeUnit.SECONDS);
    for (long pid : Procs.alive(group)) {
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }
}
