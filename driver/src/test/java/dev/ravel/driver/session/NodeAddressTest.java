package dev.ravel.driver.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

final class NodeAddressTest {
  private static Set<String> local(String... a) {
    return new LinkedHashSet<>(List.of(a));
  }

  @Test
  void choose_theGcsHostWhenItIsANodeOfThisMachine() {
    assertThat(NodeAddress.choose("10.231.9.1:6379", List.of("10.231.9.2", "10.231.9.1"),
        local("127.0.0.1", "10.231.9.1"))).contains("10.231.9.1");
  }

  @Test
  void choose_aLoopbackAddressForAHeadRegisteredUnderAnotherGivesThatAddress() {
    assertThat(NodeAddress.choose("127.0.0.1:6379", List.of("192.168.4.7"), local("127.0.0.1", "192.168.4.7")))
        .contains("192.168.4.7");
  }

  @Test
  void choose_aWorkerNodeOfThisMachineWhenTheHeadIsElsewhere() {
    assertThat(NodeAddress.choose("10.0.0.1:6379", List.of("10.0.0.1", "10.0.0.2"), local("127.0.0.1", "10.0.0.2")))
        .contains("10.0.0.2");
  }

  @Test
  void choose_unknownNodesGiveNothing() {
    assertThat(NodeAddress.choose("10.0.0.1:6379", List.of(), local("127.0.0.1"))).isEmpty();
  }

  @Test
  void choose_noNodeOnThisMachineFailsInOneLineNamingBoth() {
    assertThatThrownBy(() -> NodeAddress.choose("10.0.0.1:6379", List.of("10.0.0.1", "10.0.0.2"),
        local("127.0.0.1", "192.168.4.7")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("no node of the Ray cluster at 10.0.0.1:6379 runs on this machine (the cluster's nodes: 10.0.0.1,"
            + " 10.0.0.2; this machine's addresses: 127.0.0.1, 192.168.4.7): a Java driver needs a node of its cluster"
            + " beside it; run it on one, or join this machine first (ray start --address 10.0.0.1:6379)");
  }

  @Test
  void localAddresses_includeLoopback() {
    assertThat(NodeAddress.localAddresses()).contains("127.0.0.1");
  }
}
