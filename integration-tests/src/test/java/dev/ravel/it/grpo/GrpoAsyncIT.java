package dev.ravel.it.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.GrpoRuns;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Async GRPO on a real Ray head, engine sampling 1.0: the collector's spans nest under the driver's steps. */
final class GrpoAsyncIT {
  static final int STEPS = 4;
  static final int PROMPTS = 3;
  static final int GROUP = 4;
  static final int WORKERS = 2;

  @TempDir
  static Path runs;
  static GrpoRuns.Finished run;
  static TraceQuality quality;
  static Map<String, SpanRecord> byId;

  @BeforeAll
  static void run() {
    run = GrpoRuns.run(runs, "it-async", "run.mode=async", "grpo.steps=" + STEPS, "grpo.prompts_per_step=" + PROMPTS,
        "grpo.group_size=" + GROUP, "generation.workers=" + WORKERS, "grpo.max_trajectory_age_steps=1",
        "telemetry.preset=per_step", "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=1.0");
    quality = TraceQuality.of(run.traces().spans());
    byId = run.traces().spans().stream().collect(Collectors.toMap(SpanRecord::spanId, s -> s, (a, b) -> a));
  }

  @Test
  void run_coverageAndConnectednessAreComplete() {
    assertThat(run.traces().problems()).isEmpty();
    assertThat(run.traces().named("llm_request")).hasSizeGreaterThanOrEqualTo(STEPS * PROMPTS * GROUP);
    assertThat(quality.generationCoverage()).hasValue(1.0);
    assertThat(quality.disconnected()).isEmpty();
    assertThat(quality.connectedness()).hasValue(1.0);
  }

  @Test
  void perfetto_everyStepsLinkToItsProducersIsAFlowArrow() throws Exception {
    com.fasterxml.jackson.databind.JsonNode root = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(dev.ravel.telemetry.view.PerfettoTrace.render(run.traces().spans()));
    java.util.Map<Long, java.util.List<String>> flows = new java.util.HashMap<>();
    for (com.fasterxml.jackson.databind.JsonNode e : root.get("traceEvents")) {
      String ph = e.get("ph").asText();
      if (ph.equals("s") || ph.equals("f")) {
        flows.computeIfAbsent(e.get("id").asLong(), k -> new java.util.ArrayList<>()).add(ph);
      }
    }
    int links = run.traces().named("rl.grpo.step").stream().mapToInt(s -> s.links().size()).sum();
    assertThat(links).isPositive();
    assertThat(flows).hasSize(links)
        .allSatisfy((id, phases) -> assertThat(phases).containsExactlyInAnyOrder("s", "f"));
  }

  @Test
  void collector_generationNestsUnderTheDriverStepThatPublishedTheWeights() {
    List<SpanRecord> generations = run.traces().named("rl.grpo.generation");
    assertThat(generations).isNotEmpty().allSatisfy(g -> {
      assertThat(g.role()).isEqualTo("trajectory_collector");
      assertThat(g.attributes()).containsEntry("rl.generation.mode", "async")
          .containsKeys("rl.weight_version", "rl.target_weight_version");
      assertThat(quality.hasAncestor(g, a -> a.name().equals("rl.grpo.step") && a.role().equals("driver"))).isTrue();
      SpanRecord step = root(g);
      // published version v = the step's weight version before (step 1) or after (refit at its end) training;
      // step n (numbered from 1) starts from version n - 1
      long published = (Long) g.attributes().get("rl.weight_version");
      long stepNo = (Long) step.attributes().get("rl.step");
      assertThat(published).isIn(stepNo - 1, stepNo);
    });
  }

  @Test
  void generate_everyAsyncCallIsWrappedWithWorkerAndEngineSpansBeneath() {
    List<SpanRecord> generates = run.traces().named("rl.vllm.generate");
    // one call per worker and target step (3 groups over 2 workers: calls of 2 and 1 groups), not one per rollout
    assertThat(generates).hasSizeGreaterThanOrEqualTo(STEPS * 2).hasSizeLessThanOrEqualTo((STEPS + 1) * 2);
    assertThat(generates.stream().mapToLong(g -> (Long) g.attributes().get("rl.num_requests")).sum())
        .isGreaterThanOrEqualTo(STEPS * PROMPTS * GROUP);
    assertThat(generates).allSatisfy(g -> {
      assertThat(g.attributes()).containsEntry("rl.generation.mode", "async")
          .containsKeys("rl.weight_version", "rl.target_weight_version");
      assertThat(byId.get(g.parentSpanId()).name()).isEqualTo("rl.grpo.generation");
    });
    Set<String> generateIds = generates.stream().map(SpanRecord::spanId).collect(Collectors.toSet());
    assertThat(run.traces().named("rl.worker.generate_async")).allSatisfy(w ->
        assertThat(generateIds).contains(w.parentSpanId()));
    assertThat(run.traces().named("llm_request")).allSatisfy(e ->
        assertThat(byId.get(e.parentSpanId()).name()).isEqualTo("rl.worker.generate_async"));
  }

  @Test
  void step_linksToTheGenerateSpansThatProducedItsTrajectories() {
    List<SpanRecord> steps = run.traces().named("rl.grpo.step");
    assertThat(steps).hasSize(STEPS);
    for (SpanRecord step : steps) {
      // a link per producing call, saying how many of the step's trajectories it produced: they add up
      assertThat(step.links().stream().mapToLong(l -> (Long) l.attributes().get("rl.link.trajectories")).sum())
          .isEqualTo(PROMPTS * GROUP);
      assertThat(step.links()).hasSizeLessThanOrEqualTo(PROMPTS).allSatisfy(l -> {
        SpanRecord target = byId.get(l.spanId());
        assertThat(target).isNotNull();
        assertThat(target.name()).isEqualTo("rl.vllm.generate");
        long tv = (Long) target.attributes().get("rl.target_weight_version");
        assertThat(tv).isLessThanOrEqualTo((Long) step.attributes().get("rl.step") - 1);
      });
      List<SpanRecord> trace = run.traces().byTrace().get(step.traceId());
      Set<String> names = trace.stream().map(SpanRecord::name).collect(Collectors.toSet());
      assertThat(names).contains("rl.idle.buffer_starvation", "rl.grpo.policy_training", "rl.trainer.train");
      // every step but the last publishes new weights, pausing generation for the refit
      long stepNo = (Long) step.attributes().get("rl.step");
      if (stepNo < STEPS) {
        assertThat(names).contains("rl.grpo.refit", "rl.idle.refit_bubble", "rl.collector.publish");
        // the bubble lasts from the pause until the collector is resumed with the new version: the workers'
        // weight updates (each ending when its engine serves the version, which it reports) and the publish
        // are inside it
        SpanRecord bubble = trace.stream().filter(x -> x.name().equals("rl.idle.refit_bubble")).findFirst().orElseThrow();
        List<SpanRecord> updates = trace.stream().filter(x -> x.name().equals("rl.worker.update_weights")).toList();
        assertThat(updates).hasSize(WORKERS).allSatisfy(u -> {
          assertThat(ancestors(u)).contains(bubble.spanId());
          assertThat(u.attributes().get("rl.weight_version")).isEqualTo(stepNo);
          assertThat(u.endNanos()).isLessThanOrEqualTo(bubble.endNanos());
        });
        SpanRecord publish = trace.stream().filter(x -> x.name().equals("rl.collector.publish")
            && ancestors(x).contains(bubble.spanId())).findFirst().orElseThrow();
        assertThat(publish.startNanos()).isGreaterThanOrEqualTo(updates.stream().mapToLong(SpanRecord::endNanos).max()
            .orElseThrow());
      } else {
        assertThat(names).doesNotContain("rl.idle.refit_bubble");
      }
    }
  }

  private static List<String> ancestors(SpanRecord s) {
    List<String> out = new java.util.ArrayList<>();
    SpanRecord cur = s;
    while (!cur.isRoot() && byId.get(cur.parentSpanId()) != null) {
      cur = byId.get(cur.parentSpanId());
      out.add(cur.spanId());
    }
    return out;
  }

  private static SpanRecord root(SpanRecord s) {
    SpanRecord cur = s;
    while (!cur.isRoot()) {
      cur = byId.get(cur.parentSpanId());
    }
    return cur;
  }
}
