package dev.ravel.workers.generation.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class ServerBackendSpecTest {
  @Test
  void build_givenServers_dropsTrailingSlashes() {
    ServerBackendSpec s = ServerBackendSpec.builder().servers(List.of("http://127.0.0.1:8000/")).build();

    assertThat(s.servers()).containsExactly("http://127.0.0.1:8000");
    assertThat(s.launches()).isFalse();
  }

  @Test
  void build_neitherServersNorLaunch_namesTheKeys() {
    assertThatThrownBy(() -> ServerBackendSpec.builder().build())
        .hasMessageStartingWith("servers: ").hasMessageContaining("launch_command");
  }

  @Test
  void build_serversAndLaunch_isAnError() {
    assertThatThrownBy(() -> ServerBackendSpec.builder().servers(List.of("http://127.0.0.1:1")).launch("ravel").build())
        .hasMessageContaining("exactly one").hasMessageContaining("several");
  }

  @Test
  void build_badUrl_namesIt() {
    assertThatThrownBy(() -> ServerBackendSpec.builder().servers(List.of("127.0.0.1:8000")).build())
        .hasMessageStartingWith("servers: '127.0.0.1:8000'");
    assertThatThrownBy(() -> ServerBackendSpec.builder().servers(List.of("http://127.0.0.1")).build())
        .hasMessageContaining("host:port");
    assertThatThrownBy(() -> ServerBackendSpec.builder().servers(List.of("http://127.0.0.1:8000/v1")).build())
        .hasMessageContaining("has a path");
  }

  @Test
  void build_unknownLaunch_namesTheValue() {
    assertThatThrownBy(() -> ServerBackendSpec.builder().launch("vllm").build())
        .hasMessageStartingWith("launch: unknown value 'vllm'");
  }

  @Test
  void build_templateWithoutPort_isAnError() {
    assertThatThrownBy(() -> ServerBackendSpec.builder().launchCommand("vllm serve {model}").build())
        .hasMessageStartingWith("launch_command: must contain {port}");
  }

  @Test
  void build_zeroInFlight_namesTheKey() {
    assertThatThrownBy(() -> ServerBackendSpec.builder().launch("ravel").maxInFlight(0).build())
        .hasMessageStartingWith("max_in_flight: ");
  }

  @Test
  void shareOf_spreadsServersOverWorkers() {
    ServerBackendSpec s = ServerBackendSpec.builder()
        .servers(List.of("http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3")).build();

    assertThat(s.shareOf(0, 2)).containsExactly("http://127.0.0.1:1", "http://127.0.0.1:3");
    assertThat(s.shareOf(1, 2)).containsExactly("http://127.0.0.1:2");
    assertThat(s.shareOf(3, 4)).containsExactly("http://127.0.0.1:1");
  }

  @Test
  void forWorker_fewerServersThanWorkers_onlyWorkerIDrivesServerI() {
    ServerBackendSpec s = ServerBackendSpec.builder().servers(List.of("http://127.0.0.1:1")).build();

    ServerBackendSpec first = s.forWorker(0, 2);
    ServerBackendSpec second = s.forWorker(1, 2);

    assertThat(first.servers()).containsExactly("http://127.0.0.1:1");
    assertThat(second.servers()).containsExactly("http://127.0.0.1:1");
    assertThat(first.refitOwner()).isTrue();
    assertThat(second.refitOwner()).isFalse();
    assertThat(ServerBackendSpec.builder().launch("ravel").build().forWorker(1, 2).refitOwner()).isTrue();
  }
}
