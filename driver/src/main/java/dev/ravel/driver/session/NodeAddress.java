package dev.ravel.driver.session;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The address under which this machine's Ray node is registered in the cluster, which a Java driver must give Ray
 * ({@code ray.node-ip}) to find its raylet: the cluster's alive node addresses (from its dashboard) that are an
 * address of this machine. Without it, a loopback {@code RAY_ADDRESS} for a head registered under another address
 * waits 30 s and ends in a stack trace; with it, a driver off the cluster fails at once, in one line.
 */
final class NodeAddress {
  private NodeAddress() {}

  /**
   * This machine's node among {@code clusterNodes}: the GCS's host when it is one of them and local, else the first
   * local one; empty when the cluster's nodes are unknown (an empty list).
   *
   * @throws IllegalStateException one line naming the cluster's nodes and this machine's addresses when none of
   *     the nodes is on this machine
   */
  static Optional<String> choose(String address, List<String> clusterNodes, Set<String> local) {
    if (clusterNodes.isEmpty()) {
      return Optional.empty();
    }
    String host = hostOf(address);
    if (clusterNodes.contains(host) && local.contains(host)) {
      return Optional.of(host);
    }
    for (String n : clusterNodes) {
      if (local.contains(n)) {
        return Optional.of(n);
      }
    }
    throw new IllegalStateException("no node of the Ray cluster at " + address + " runs on this machine (the"
        + " cluster's nodes: " + String.join(", ", clusterNodes) + "; this machine's addresses: "
        + String.join(", ", local) + "): a Java driver needs a node of its cluster beside it; run it on one, or"
        + " join this machine first (ray start --address " + address + ")");
  }

  /** The host part of {@code host:port}. */
  static String hostOf(String address) {
    return address.contains(":") ? address.substring(0, address.lastIndexOf(':')) : address;
  }

  /** Every IPv4 and IPv6 address of this machine's interfaces (loopback included), as text. */
  static Set<String> localAddresses() {
    Set<String> out = new LinkedHashSet<>();
    try {
      for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        for (InetAddress a : Collections.list(ni.getInetAddresses())) {
          String s = a.getHostAddress();
          int zone = s.indexOf('%');
          out.add(zone < 0 ? s : s.substring(0, zone));
        }
      }
    } catch (SocketException e) {
      // no interfaces listed: only what the cluster says can decide
    }
    return out;
  }
}
