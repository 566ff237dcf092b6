package dev.ravel.it.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.it.support.GrpoRuns;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sync GRPO on a real Ray head, engine sampling 1.0: span placement, coverage, connectedness. */
final class GrpoSyncIT {
  static final int STEPS = 3;
  static final int PROMPTS = 4;
  static final int GROUP = 4;
  static final int WORKERS = 2;

  @TempDir
  static Path runs;
  static GrpoRuns.Finished run;
  static TraceQuality quality;

  @BeforeAll
  static void run() {
    run = GrpoRuns.run(runs, "it-sync", "run.mode=sync", "grpo.steps=" + STEPS, "grpo.prompts_per_step=" + PROMPTS,
        "grpo.group_size=" + GROUP, "generation.workers=" + WORKERS, "telemetry.preset=per_step",
        "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=1.0");
    quality = TraceQuality.of(run.traces().spans());
  }

  @Test
  void run_eachStepIsALineOfStepsJsonlAndTheRunsStepMetrics() throws Exception {
    Path runDir = run.config().telemetry().runDir();
    List<String> lines = java.nio.file.Files.readAllLines(runDir.resolve("steps.jsonl"));
    assertThat(lines).hasSize(STEPS);
    com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
    for (int i = 0; i < STEPS; i++) {
      com.fasterxml.jackson.databind.JsonNode line = json.readTree(lines.get(i));
      assertThat(line.get("step").asInt()).isEqualTo(i + 1); // numbered from 1, as the progress line counts
      assertThat(line.get("traceId").asText()).isEqualTo(run.steps().get(i).traceId());
      assertThat(line.get("rewardMean").asDouble()).isEqualTo(run.steps().get(i).rewardMean());
      assertThat(line.get("rewardStd").asDouble()).isBetween(0.0, 0.5);
      // the engines over the step: every request the step generated, finished by the workers' engines
      com.fasterxml.jackson.databind.JsonNode engine = line.get("engine");
      assertThat(engine.get("requests").asInt()).as("step %d", i + 1).isEqualTo(PROMPTS * GROUP);
      assertThat(engine.get("queueTimeMean").asDouble()).isGreaterThanOrEqualTo(0.0);
      assertThat(engine.get("runningMean").asDouble()).isGreaterThan(0.0); // requests ran during the step
      assertThat(engine.get("kvUsageMean").asDouble()).isGreaterThan(0.0).isLessThanOrEqualTo(1.0);
    }
    // every trajectory trained on is counted in the run's own metrics, step by step
    assertThat(dev.ravel.it.support.RunMetrics.counter(runDir, "driver", "rl.step.trajectories"))
        .isEqualTo((long) STEPS * PROMPTS * GROUP);
  }

  @Test
  void run_coverageAndConnectednessAreComplete() {
    assertThat(run.traces().problems()).isEmpty();
    assertThat(run.traces().named("llm_request")).hasSize(STEPS * PROMPTS * GROUP);
    assertThat(quality.generationCoverage()).hasValue(1.0);
    assertThat(quality.disconnected()).isEmpty();
    assertThat(quality.connectedness()).hasValue(1.0);
  }

  @Test
  void step_isOneTraceWithThePhasesAsDesignPlacesThem() {
    List<SpanRecord> roots = run.traces().named("rl.grpo.step");
    assertThat(roots).hasSize(STEPS).allSatisfy(r -> assertThat(r.isRoot()).isTrue());
    for (SpanRecord root : roots) {
      long step = (Long) root.attributes().get("rl.step");
      List<SpanRecord> trace = run.traces().byTrace().get(root.traceId());
      Map<String, List<SpanRecord>> byName = trace.stream().collect(Collectors.groupingBy(SpanRecord::name));
      for (String phase : List.of("rl.grpo.data_processing", "rl.grpo.generation", "rl.grpo.reward_calculation",
          "rl.grpo.policy_and_reference_logprobs", "rl.grpo.advantage_calculation", "rl.grpo.policy_training")) {
        assertThat(byName.get(phase)).as(phase).isNotEmpty()
            .allSatisfy(s -> assertThat(s.parentSpanId()).isEqualTo(root.spanId()));
      }
      SpanRecord generation = byName.get("rl.grpo.generation").get(0);
      SpanRecord generate = only(byName, "rl.vllm.generate");
      assertThat(generate.parentSpanId()).isEqualTo(generation.spanId());
      assertThat(generate.attributes()).containsEntry("rl.generation.mode", "sync");
      List<SpanRecord> workerSpans = byName.get("rl.worker.generate");
      assertThat(workerSpans).hasSize(WORKERS).allSatisfy(w -> {
        assertThat(w.parentSpanId()).isEqualTo(generate.spanId());
        assertThat(w.role()).isEqualTo("generation_worker");
      });
      assertThat(workerSpans.stream().map(SpanRecord::process).distinct()).hasSize(WORKERS);
      List<String> workerIds = workerSpans.stream().map(SpanRecord::spanId).toList();
      assertThat(byName.get("llm_request")).hasSize(PROMPTS * GROUP).allSatisfy(e -> {
        assertThat(workerIds).contains(e.parentSpanId());
        assertThat(e.kind()).isEqualTo(2);
        assertThat(e.attributes()).containsKeys("gen_ai.request.id", "gen_ai.usage.prompt_tokens",
            "gen_ai.usage.completion_tokens", "gen_ai.latency.time_in_queue", "gen_ai.latency.time_to_first_token",
            "gen_ai.latency.e2e", "gen_ai.response.finish_reasons");
      });
      assertThat(only(byName, "rl.reward.score").parentSpanId())
          .isEqualTo(only(byName, "rl.grpo.reward_calculation").spanId());
      assertThat(only(byName, "rl.trainer.logprobs").parentSpanId())
          .isEqualTo(only(byName, "rl.grpo.policy_and_reference_logprobs").spanId());
      assertThat(only(byName, "rl.trainer.train").parentSpanId())
          .isEqualTo(only(byName, "rl.grpo.policy_training").spanId());
      if (step > 1) { // the first step (rl.step 1) starts from the initial weights: no refit
        SpanRecord refit = only(byName, "rl.grpo.refit");
        assertThat(refit.parentSpanId()).isEqualTo(root.spanId());
        assertThat(byName.get("rl.worker.update_weights")).hasSize(WORKERS)
            .allSatisfy(u -> assertThat(u.parentSpanId()).isEqualTo(refit.spanId()));
        // its stages: the driver puts the weights in the object store once, each worker fetches and loads them,
        // every stage with the weights' bytes (4 per parameter of the run's TinyLm)
        long bytes = 4L * dev.ravel.workers.model.ModelSpec.tiny(dev.ravel.workers.model.CharTokenizer.arithmetic()
            .vocabSize()).toBuilder().hiddenDim(run.config().get(dev.ravel.driver.config.Keys.JAVA_HIDDEN))
            .embedDim(run.config().get(dev.ravel.driver.config.Keys.JAVA_EMBED)).build().parameterCount();
        SpanRecord put = only(byName, "rl.refit.put");
        assertThat(put.parentSpanId()).isEqualTo(refit.spanId());
        assertThat(put.attributes()).containsEntry("rl.refit.bytes", bytes);
        List<String> updates = byName.get("rl.worker.update_weights").stream().map(SpanRecord::spanId).toList();
        for (String stage : List.of("rl.refit.fetch", "rl.refit.load")) {
          assertThat(byName.get(stage)).as(stage).hasSize(WORKERS).allSatisfy(x -> {
            assertThat(updates).contains(x.parentSpanId());
            assertThat(x.attributes()).containsEntry("rl.refit.bytes", bytes);
          });
        }
      }
    }
  }

  @Test
  void steps_rayCallsGrowWithWorkersNotRollouts() {
    // refit W + generate W + reward + logprobs + train, and the trainer's checkpoint after the last step
    assertThat(run.steps().subList(1, STEPS)).allSatisfy(m -> assertThat(m.rayCalls())
        .isEqualTo(2L * WORKERS + 3 + (m.step() == STEPS ? 1 : 0)));
    assertThat(run.steps()).allSatisfy(m -> {
      assertThat(m.trajectories()).isEqualTo(PROMPTS * GROUP);
      assertThat(m.phases()).containsKeys("generation", "training", "reward");
      assertThat(m.tokensPerSecond()).isPositive();
    });
    assertThat(run.steps().stream().map(StepRecord::weightVersion)).containsExactly(1L, 2L, 3L);
  }

  private static SpanRecord only(Map<String, List<SpanRecord>> byName, String name) {
    assertThat(byName.get(name)).as(name).hasSize(1);
    return byName.get(name).get(0);
  }
}
