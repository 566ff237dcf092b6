package dev.ravel.driver.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.driver.config.RunConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class RunSummaryTest {
  private static final Instant STARTED = Instant.parse("2026-11-29T08:00:00Z");
  private static final Instant FINISHED = Instant.parse("2026-11-29T08:05:30Z");

  @TempDir
  Path tmp;

  private Locale locale;

  @BeforeEach
  void fixLocale() {
    locale = Locale.getDefault();
    Locale.setDefault(Locale.ROOT);
  }

  @AfterEach
  void restoreLocale() {
    Locale.setDefault(locale);
  }

  @Test
  void write_producesJsonWithRunFieldsStepMetricsAndConfig() throws IOException {
    Path runDir = tmp.resolve("runs").resolve("r-1");
    List<StepMetrics> steps = List.of(step(0, 0.25, 1.5), step(1, 0.5, 1.25));
    Map<String, Object> config = RunConfig.load(null, List.of("grpo.steps=2"), Map.of()).flatten();

    Path file = RunSummary.write(runDir, "r-1", "sync", STARTED, FINISHED, "succeeded", steps, config,
        Map.of("collector", Map.of("groups", 3)));

    assertThat(file).isEqualTo(runDir.resolve(RunSummary.FILE)).isRegularFile();
    JsonNode root = new ObjectMapper().readTree(file.toFile());
    assertThat(root.path("run_id").asText()).isEqualTo("r-1");
    assertThat(root.path("mode").asText()).isEqualTo("sync");
    assertThat(root.path("status").asText()).isEqualTo("succeeded");
    assertThat(root.path("started").asText()).isEqualTo("2026-11-29T08:00:00Z");
    assertThat(root.path("finished").asText()).isEqualTo("2026-11-29T08:05:30Z");
    assertThat(root.path("steps").asInt()).isEqualTo(2);
    assertThat(root.path("collector").path("groups").asInt()).isEqualTo(3);

    JsonNode metrics = root.path("step_metrics");
    assertThat(metrics.isArray()).isTrue();
    assertThat(metrics).hasSize(2);
    JsonNode second = metrics.get(1);
    assertThat(second.path("step").asInt()).isEqualTo(1);
    assertThat(second.path("stepSeconds").asDouble()).isEqualTo(1.25);
    assertThat(second.path("rewardMean").asDouble()).isEqualTo(0.5);
    assertThat(second.path("kl").asDouble()).isEqualTo(0.01);
    assertThat(second.path("rayCalls").asLong()).isEqualTo(40);
    assertThat(second.path("traceId").asText()).isEqualTo("trace-1");
    assertThat(second.path("phases").path("generation").asDouble()).isEqualTo(1.0);
    assertThat(second.path("phases").path("training").asDouble()).isEqualTo(0.25);

    JsonNode cfg = root.path("config");
    assertThat(cfg.path("grpo.steps").isInt()).as("a number, not a string").isTrue();
    assertThat(cfg.path("grpo.steps").asInt()).isEqualTo(2);
    assertThat(cfg.path("run.mode").asText()).isEqualTo("sync");
  }

  @Test
  void write_failedRunWithoutStepsStillWritesTheSummary() throws IOException {
    Path file = RunSummary.write(tmp, "r-2", "async", STARTED, FINISHED, "failed", List.of(), Map.of(), Map.of());

    JsonNode root = new ObjectMapper().readTree(file.toFile());
    assertThat(root.path("status").asText()).isEqualTo("failed");
    assertThat(root.path("steps").asInt()).isZero();
    assertThat(root.path("step_metrics").isArray()).isTrue();
    assertThat(root.path("step_metrics")).isEmpty();
  }

  @Test
  void write_unwritableRunDirNamesTheFile() throws IOException {
    Path notADir = Files.writeString(tmp.resolve("occupied"), "x");

    assertThatThrownBy(() -> RunSummary.write(notADir, "r", "sync", STARTED, FINISHED, "succeeded", List.of(),
        Map.of(), Map.of()))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining(notADir.resolve(RunSummary.FILE).toString());
  }

  @Test
  void rewardTrend_risingSeriesComparesFirstAndLastSteps() {
    List<StepMetrics> steps = new ArrayList<>();
    double[] rewards = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    for (int i = 0; i < rewards.length; i++) {
      steps.add(step(i, rewards[i], 1));
    }

    assertThat(RunSummary.rewardTrend(steps, 3)).isEqualTo("reward 0.200 -> 0.700 (mean of first/last 3 steps)");
  }

  @Test
  void rewardTrend_shortRunUsesNonOverlappingHalves() {
    List<StepMetrics> steps = List.of(step(0, 0, 1), step(1, 0, 1), step(2, 1, 1), step(3, 1, 1));

    assertThat(RunSummary.rewardTrend(steps, 3)).isEqualTo("reward 0.000 -> 1.000 (mean of first/last 2 steps)");
  }

  @Test
  void rewardTrend_oneStepAndNoSteps() {
    assertThat(RunSummary.rewardTrend(List.of(step(0, 0.4, 1)), 3))
        .isEqualTo("reward 0.400 -> 0.400 (mean of first/last 1 steps)");
    assertThat(RunSummary.rewardTrend(List.of(), 3)).isEqualTo("no steps");
  }

  private static StepMetrics step(int i, double reward, double seconds) {
    return new StepMetrics(i, "sync", reward, 0.3, 0.01, -0.02, 0.1, 128, 256.0, seconds,
        Map.of("generation", 1.0, "training", 0.25), i, 64, 0, 40, "trace-" + i);
  }
}
