package dev.ravel.driver.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.driver.config.RunConfig;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class GrpoSettingsTest {
  private static GrpoSettings of(String... overrides) {
    return GrpoSettings.from(RunConfig.load(null, List.of(overrides), Map.of()));
  }

  @Test
  void from_readsEveryValueOnceIntoTheTrainerAndSamplingSettings() {
    GrpoSettings s = of("run.mode=async", "run.seed=42", "grpo.steps=9", "grpo.prompts_per_step=5",
        "grpo.group_size=3", "grpo.temperature=0.7", "grpo.top_p=0.9", "grpo.max_new_tokens=6",
        "grpo.max_trajectory_age_steps=2", "generation.workers=3", "generation.kv_token_budget=1000");

    assertThat(s.async()).isTrue();
    assertThat(s.mode()).isEqualTo("async");
    assertThat(s.steps()).isEqualTo(9);
    assertThat(s.seed()).isEqualTo(42);
    assertThat(s.maxAge()).isEqualTo(2);
    assertThat(s.workers()).isEqualTo(3);
    assertThat(s.kvTokenBudget()).isEqualTo(1000);
    assertThat(s.grpo().groupSize()).isEqualTo(3);
    assertThat(s.grpo().promptsPerStep()).isEqualTo(5);
    assertThat(s.sampling().temperature()).isEqualTo(s.grpo().temperature()).isEqualTo(0.7);
    assertThat(s.sampling().topP()).isEqualTo(0.9);
    assertThat(s.sampling().maxTokens()).isEqualTo(6);
    assertThat(s.sampling().seed()).isEqualTo(42);
  }

  @Test
  void from_placementNoneHasNoStrategyAndOthersAreRaysWithTheirBundle() {
    assertThat(of().placement().strategy()).isNull();
    GrpoSettings s = of("generation.placement=strict_spread", "generation.num_cpus=0.5",
        "generation.resources=[ravel_node_1=0.01]", "trainer.resources=[ravel_node_0=0.01]");
    assertThat(s.placement().strategy()).isEqualTo(io.ray.api.placementgroup.PlacementStrategy.STRICT_SPREAD);
    assertThat(Placements.bundle(s.placement())).containsExactly(Map.entry("CPU", 0.5), Map.entry("ravel_node_1", 0.01));
    assertThat(s.placement().trainerResources()).containsExactly(Map.entry("ravel_node_0", 0.01));
    // a Java worker asks for no GPU even when generation.num_gpus is set (it is the Python workers' key)
    assertThat(Placements.bundle(of("generation.placement=pack", "generation.num_gpus=1").placement()))
        .containsOnlyKeys("CPU");
  }

  @Test
  void from_trainerGroupHasItsRanksStrategyAndBundle() {
    GrpoSettings s = of("generation.runtime=python", "trainer.runtime=python", "trainer.workers=2",
        "trainer.placement=strict_spread", "trainer.num_cpus=0.5", "trainer.num_gpus=1",
        "trainer.resources=[ravel_node_0=0.01]");
    assertThat(s.python().trainers()).isEqualTo(2);
    assertThat(s.placement().trainerStrategy()).isEqualTo(io.ray.api.placementgroup.PlacementStrategy.STRICT_SPREAD);
    assertThat(Placements.trainerBundle(s.placement()))
        .containsExactly(Map.entry("CPU", 0.5), Map.entry("GPU", 1.0), Map.entry("ravel_node_0", 0.01));
    assertThat(of("generation.runtime=python", "trainer.runtime=python").python().trainers()).isEqualTo(1);
    assertThat(of().placement().trainerStrategy()).isNull();
  }

  @Test
  void placementMessage_namesTheKeyTheBundlesAndTheAliveNodes() {
    GrpoSettings s = of("generation.placement=strict_spread");
    assertThat(Placements.message("generation.placement", s.placement().strategy(), 3, "generation worker",
        Placements.bundle(s.placement()), List.of("10.231.7.1 (CPU 4, GPU 0)", "10.231.7.2 (CPU 4, GPU 0)"), 60_000,
        "generation.num_cpus or generation.workers"))
        .isEqualTo("generation.placement=strict_spread: Ray could not place 3 bundles of {CPU=1.0} (one per generation"
            + " worker) within 60 s on the cluster's 2 alive nodes [10.231.7.1 (CPU 4, GPU 0), 10.231.7.2 (CPU 4, GPU 0)];"
            + " lower generation.num_cpus or generation.workers, or choose another placement");
  }

  @Test
  void from_ignoreEosReachesTheSamplingSettings() {
    assertThat(of().sampling().ignoreEos()).isFalse();
    assertThat(of("generation.ignore_eos=true").sampling().ignoreEos()).isTrue();
  }

  @Test
  void checkpointAfter_everyNStepsAndTheLast() {
    GrpoSettings s = of("grpo.steps=7", "grpo.checkpoint_every=3");

    assertThat(List.of(0, 1, 2, 3, 4, 5, 6).stream().filter(s::checkpointAfter).toList()).containsExactly(2, 5, 6);
    assertThat(of("grpo.steps=4").checkpointAfter(2)).isFalse();
    assertThat(of("grpo.steps=4").checkpointAfter(3)).isTrue();
  }

  @Test
  void groupsPerCall_zeroSplitsTheStepsGroupsEvenlyOverTheWorkers() {
    assertThat(of("grpo.prompts_per_step=32", "generation.workers=2").groupsPerCall()).isEqualTo(16);
    assertThat(of("grpo.prompts_per_step=3", "generation.workers=2").groupsPerCall()).isEqualTo(2);
    assertThat(of("grpo.prompts_per_step=3", "generation.workers=5").groupsPerCall()).isEqualTo(1);
    assertThat(of("grpo.prompts_per_step=32", "grpo.groups_per_call=4").groupsPerCall()).isEqualTo(4);
  }
}
