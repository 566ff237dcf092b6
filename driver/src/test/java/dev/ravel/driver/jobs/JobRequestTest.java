package dev.ravel.driver.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.telemetry.config.ConfigException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JobRequestTest {

  @Test
  void toBody_withEveryField_writesRayFieldNames() throws Exception {
    JobRequest r = JobRequest.builder().entrypoint("python job.py").submissionId("run-1_a.b")
        .runtimeEnv(Map.of("pip", List.of("requests"))).envVar("FOO", "bar").metadata("rl.run.id", "run-1")
        .entrypointNumCpus(1.5).entrypointNumGpus(0).entrypointMemory(1024).entrypointResource("tpu", 2).build();

    JsonNode json = Json.MAPPER.readTree(Json.write(r.toBody()));

    assertThat(json.get("entrypoint").asText()).isEqualTo("python job.py");
    assertThat(json.get("submission_id").asText()).isEqualTo("run-1_a.b");
    assertThat(json.at("/runtime_env/env_vars/FOO").asText()).isEqualTo("bar");
    assertThat(json.at("/runtime_env/pip/0").asText()).isEqualTo("requests");
    assertThat(json.at("/metadata/rl.run.id").asText()).isEqualTo("run-1");
    assertThat(json.get("entrypoint_num_cpus").asDouble()).isEqualTo(1.5);
    assertThat(json.get("entrypoint_num_gpus").asDouble()).isEqualTo(0.0);
    assertThat(json.get("entrypoint_memory").isIntegralNumber()).isTrue();
    assertThat(json.get("entrypoint_memory").asLong()).isEqualTo(1024);
    assertThat(json.at("/entrypoint_resources/tpu").asDouble()).isEqualTo(2.0);
  }

  @Test
  void toBody_withOnlyEntrypoint_leavesOutUnsetFields() throws Exception {
    JsonNode json = Json.MAPPER.readTree(Json.write(JobRequest.builder().entrypoint("true").build().toBody()));

    assertThat(json.size()).isEqualTo(1);
    assertThat(json.get("entrypoint").asText()).isEqualTo("true");
  }

  @Test
  void build_withoutEntrypoint_failsNamingEntrypoint() {
    assertThatThrownBy(() -> JobRequest.builder().build()).isInstanceOf(ConfigException.class)
        .satisfies(e -> assertThat(((ConfigException) e).key()).isEqualTo("entrypoint"));
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("  ").build()).hasMessageStartingWith("entrypoint:");
  }

  @Test
  void build_withInvalidSubmissionId_failsNamingItAndTheValue() {
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").submissionId("a/b").build())
        .isInstanceOf(ConfigException.class).hasMessageStartingWith("submission_id:").hasMessageContaining("'a/b'");
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").submissionId("x".repeat(129)).build())
        .hasMessageStartingWith("submission_id:");
  }

  @Test
  void build_withNonStringEnvVar_failsNamingTheVariable() {
    Map<String, Object> env = Map.of("env_vars", Map.of("N", 5));

    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").runtimeEnv(env).build())
        .isInstanceOf(ConfigException.class).hasMessageStartingWith("runtime_env.env_vars.N:");
  }

  @Test
  void build_withInvalidEnvVarName_failsNamingIt() {
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").envVar("A=B", "x").build())
        .hasMessageStartingWith("runtime_env.env_vars:").hasMessageContaining("'A=B'");
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").envVar("OK", null).build())
        .hasMessageStartingWith("runtime_env.env_vars.OK:");
  }

  @Test
  void build_withEnvVarsThatAreNotAMap_failsNamingEnvVars() {
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").runtimeEnv(Map.of("env_vars", "A=1")).build())
        .hasMessageStartingWith("runtime_env.env_vars:");
  }

  @Test
  void build_withNonJsonRuntimeEnvValue_failsNamingThePath() {
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true")
        .runtimeEnv(Map.of("config", Map.of("x", new Object()))).build())
        .hasMessageStartingWith("runtime_env.config.x:");
  }

  @Test
  void build_withNullMetadataValue_failsNamingTheKey() {
    Map<String, String> md = new LinkedHashMap<>();
    md.put("owner", null);

    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").metadata(md).build())
        .hasMessageStartingWith("metadata.owner:");
  }

  @Test
  void build_withNegativeOrNonFiniteResources_failsNamingTheField() {
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").entrypointNumCpus(-1).build())
        .hasMessageStartingWith("entrypoint_num_cpus:").hasMessageContaining("-1.0");
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").entrypointNumGpus(Double.NaN).build())
        .hasMessageStartingWith("entrypoint_num_gpus:");
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").entrypointMemory(-5).build())
        .hasMessageStartingWith("entrypoint_memory:");
    assertThatThrownBy(() -> JobRequest.builder().entrypoint("true").entrypointResource("tpu", -2).build())
        .hasMessageStartingWith("entrypoint_resources.tpu:");
  }

  @Test
  void envVar_overRuntimeEnvEnvVars_wins() {
    JobRequest r = JobRequest.builder().entrypoint("true").runtimeEnv(Map.of("env_vars", Map.of("A", "1", "B", "2")))
        .envVar("A", "3").build();

    assertThat(r.envVars()).containsEntry("A", "3").containsEntry("B", "2");
  }

  @Test
  void runtimeEnv_afterBuild_isDeeplyImmutable() {
    Map<String, Object> nested = new LinkedHashMap<>();
    nested.put("k", "v");
    JobRequest r = JobRequest.builder().entrypoint("true").runtimeEnv(Map.of("config", nested)).build();
    nested.put("k", "changed");

    assertThat(r.runtimeEnv().get("config")).isEqualTo(Map.of("k", "v"));
    @SuppressWarnings("unchecked")
    Map<String, Object> inner = (Map<String, Object>) r.runtimeEnv().get("config");
    assertThatThrownBy(() -> inner.put("x", "y")).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void toString_withSecretLookingValues_masksThem() {
    JobRequest r = JobRequest.builder().entrypoint("true").envVar("RAVEL_OTLP_HEADERS", "authorization=Bearer%20xyz")
        .envVar("HF_TOKEN", "hf_abc").envVar("PLAIN", "visible").metadata("api_token", "t0k3n").build();

    assertThat(r.toString()).doesNotContain("xyz", "hf_abc", "t0k3n").contains("PLAIN=visible", "****");
  }

  @Test
  void command_withOneWord_usesItVerbatim() {
    assertThat(JobRequest.builder().command(List.of("echo hi && sleep 1")).build().entrypoint())
        .isEqualTo("echo hi && sleep 1");
  }

  @Test
  void command_withSeveralWords_quotesEachForTheShell() {
    JobRequest r = JobRequest.builder().command(List.of("/opt/ravel/bin/ravel", "run", "my config.yaml",
        "grpo.steps=2", "it's", "")).build();

    assertThat(r.entrypoint()).isEqualTo("/opt/ravel/bin/ravel run 'my config.yaml' grpo.steps=2 'it'\"'\"'s' ''");
  }
}
