package dev.ravel.driver.trackers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class TrackerMetricsTest {
  @Test
  void of_aFullStep_hasEveryNumberOfItsRecordUnderItsName() {
    Map<String, Double> m = TrackerMetrics.of(Steps.full(3));

    assertThat(m).containsExactly(
        entry("rl.step.reward.mean", 0.375), entry("rl.step.reward.std", 0.4), entry("rl.step.kl", 0.03),
        entry("rl.step.loss", -0.02), entry("rl.step.clip_fraction", 0.1), entry("rl.step.tokens", 128.0),
        entry("rl.step.tokens_per_second", 256.5), entry("rl.step.duration", 4.5),
        entry("rl.step.phase.duration.generation", 3.5), entry("rl.step.phase.duration.training", 0.25),
        entry("rl.step.weight_version", 4.0), entry("rl.step.trajectories.used", 16.0),
        entry("rl.step.trajectories.dropped", 2.0), entry("rl.step.ray_calls", 12.0),
        entry("rl.completion.length.mean", 3.5), entry("rl.completion.length.max", 4.0),
        entry("rl.completion.clipped", 1.0), entry("rl.completion.clipped_share", 1.0 / 16),
        entry("rl.eval.reward", 0.75), entry("rl.eval.accuracy", 0.5), entry("rl.eval.completions", 8.0),
        entry("rl.step.grad_norm", 1.25), entry("rl.step.learning_rate", 1e-3), entry("rl.step.entropy", 2.5),
        entry("rl.step.clip_fraction.side.low", 0.01), entry("rl.step.clip_fraction.side.high", 0.02),
        entry("rl.step.clip_fraction.side.dual", 0.03), entry("rl.step.ratio.mean", 1.01),
        entry("rl.step.ratio.max", 1.5), entry("rl.step.tis_truncated", 0.04), entry("rl.groups.zero_advantage", 3.0),
        entry("rl.step.kept_sequences", 13.0), entry("rl.step.epochs", 1.0),
        entry("rl.step.reward.component.format", 0.9), entry("rl.step.reward.failed", 1.0),
        entry("rl.step.policy_lag.mean", 0.25), entry("rl.step.policy_lag.max", 1.0), entry("rl.buffer.depth", 5.0),
        entry("rl.collector.in_flight", 2.0), entry("rl.step.engine.requests", 24.0),
        entry("rl.step.engine.queue_time.mean", 0.125), entry("rl.step.engine.preemptions", 2.0),
        entry("rl.step.engine.running.mean", 1.5), entry("rl.step.engine.waiting.mean", 0.5),
        entry("rl.step.engine.kv_cache.usage.mean", 0.25));
  }

  @Test
  void metricKey_aComponentNameMlflowRefuses_isCleanedCutAndKeptApart() {
    Map<String, Double> taken = new java.util.HashMap<>();
    String a = TrackerMetrics.metricKey("rl.step.reward.component", "len<512", taken);
    assertThat(a).isEqualTo("rl.step.reward.component.len_512");
    taken.put(a, 1.0);
    assertThat(TrackerMetrics.metricKey("rl.step.reward.component", "len>512", taken))
        .isEqualTo("rl.step.reward.component.len_512_2");
    assertThat(TrackerMetrics.metricKey("rl.step.reward.component", "ok-name.v2: a/b", taken))
        .isEqualTo("rl.step.reward.component.ok-name.v2: a/b");
    assertThat(TrackerMetrics.metricKey("rl.step.reward.component", "x".repeat(400), taken))
        .hasSize(TrackerMetrics.MAX_NAME);
  }

  @Test
  void of_aStepWithoutEvalOrLaterFields_leavesThemOut() {
    Map<String, Double> m = TrackerMetrics.of(Steps.plain(2));

    assertThat(m).containsKeys("rl.step.reward.mean", "rl.step.duration", "rl.step.phase.duration.generation")
        .doesNotContainKeys("rl.eval.reward", "rl.step.grad_norm", "rl.step.policy_lag.mean",
            "rl.completion.length.mean");
  }

  @Test
  void readme_namesEveryMetricATrackerGets() throws Exception {
    String readme = Files.readString(Path.of("").toAbsolutePath().getParent().resolve("README.md"));
    int section = readme.indexOf("### Experiment trackers");
    assertThat(section).as("README.md has a section 'Experiment trackers'").isNotNegative();
    String text = readme.substring(section);

    for (String name : TrackerMetrics.of(Steps.full(1)).keySet()) {
      // an attribute's series is documented as its name with <phase>, <side>, <component>, used|dropped
      String documented = name.replaceFirst("^(rl\\.step\\.phase\\.duration)\\..*", "$1.<phase>")
          .replaceFirst("^(rl\\.step\\.clip_fraction\\.side)\\..*", "$1.<side>")
          .replaceFirst("^(rl\\.step\\.reward\\.component)\\..*", "$1.<component>")
          .replaceFirst("^(rl\\.step\\.trajectories)\\.(used|dropped)$", "$1.used");
      if (documented.equals("rl.step.trajectories.used")) {
        assertThat(text).contains("`rl.step.trajectories.used`", "`rl.step.trajectories.dropped`");
      } else {
        assertThat(text).as(name).contains("`" + documented + "`");
      }
    }
  }
}
