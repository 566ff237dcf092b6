package dev.ravel.it.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.it.support.GrpoRuns;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole pipeline learns: a sync GRPO run on a real Ray head, fixed seed, from a fresh model. Generation
 * is seeded per request and independent of batching, and training is single-threaded, so the run is
 * reproducible; the margin is about the size of the effect, not luck: per step the mean is over 32 groups
 * of 8, so even counting a group as one observation a 5-step mean has a standard error of at most
 * sqrt(0.25 / 32 / 5) = 0.040 and the difference of two such means at most 0.056; 0.3 is over 5 of those.
 */
final class GrpoLearningIT {
  @TempDir
  static Path runs;

  @Test
  void run_meanRewardOfTheLastStepsBeatsTheFirstSteps() {
    List<StepRecord> steps = GrpoRuns.run(runs, "it-learning", "run.mode=sync", "run.seed=7", "grpo.steps=40",
        "grpo.prompts_per_step=32", "grpo.group_size=8", "generation.workers=2", "telemetry.preset=default",
        "telemetry.engine_tracing=false").steps();
    double first = steps.subList(0, 5).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    double last = steps.subList(35, 40).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    System.out.printf("reward: first 5 steps %.3f, last 5 steps %.3f%n", first, last);
    assertThat(last - first).isGreaterThan(0.3);
  }
}
