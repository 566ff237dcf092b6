package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.AsyncLinks;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code bin/ravel run examples/grpo-python.yaml}, sync and async, on a local Ray head: the Java driver runs
 * the GRPO loop with Ravel's Python generation workers (transformers) and Python trainer (PyTorch). In async mode
 * the reward rises, every Python span sits in its step's trace and each step links to every call that produced
 * one of its trajectories (256 a step). The margin: per step the mean is over 32 groups of 8, so a 3-step mean has
 * a standard error of at most sqrt(0.25 / 32 / 3) = 0.051, the difference of two at most 0.072; 0.3 is over 4 of
 * those (the seeded run's difference is about 0.5 after 50 steps, where 40 give about 0.3). That sync training
 * with the Python workers learns is YourModelIT's claim (its sync run); the sync run here is short, and shows the
 * same spans and the GRPO settings reaching the trainer.
 */
final class GrpoPythonIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  static Path runs;

  @Test
  void run_async_rewardRisesAndPythonSpansAreInTheirStepsTraces() throws Exception {
    String id = "it-python-async";
    // async trains on trajectories up to a version old: 50 steps (class comment)
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 900, "run", example(), "run.mode=async",
        "grpo.steps=50", "telemetry.run_id=" + id, "telemetry.runs_dir=" + runs, "telemetry.engine_sample_ratio=1.0");
    assertThat(r.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
    Path runDir = runs.resolve(id);

    JsonNode summary = JSON.readTree(runDir.resolve("run.json").toFile());
    List<Double> rewards = new ArrayList<>();
    summary.get("step_metrics").forEach(m -> rewards.add(m.get("rewardMean").asDouble()));
    int n = rewards.size();
    assertThat(n).isEqualTo(summary.get("config").get("grpo.steps").asInt());
    double first = rewards.subList(0, 3).stream().mapToDouble(Double::doubleValue).average().orElseThrow();
    double last = rewards.subList(n - 3, n).stream().mapToDouble(Double::doubleValue).average().orElseThrow();
    System.out.printf("python workers, async: reward first 3 steps %.3f, last 3 steps %.3f%n", first, last);
    assertThat(last - first).isGreaterThan(0.3);

    RunTraces traces = assertPythonSpansInTheirStepsTraces(runDir, "async");
    int trajectories = summary.get("config").get("grpo.prompts_per_step").asInt()
        * summary.get("config").get("grpo.group_size").asInt();
    // one call per worker and target step: at most 4 per worker and step
    AsyncLinks.assertEveryStepLinksToEveryProducer(traces, n, trajectories, 2 * 4);
  }

  /**
   * Every Python span of the run in {@code runDir} (every engine request traced) sits in its step's trace: the
   * engine's requests under the workers' calls, the trainer's under the step's training, the refit's stages
   * inside the step's refit; the checkpoints are the Python trainer's.
   */
  private static RunTraces assertPythonSpansInTheirStepsTraces(Path runDir, String mode) throws Exception {
    JsonNode summary = JSON.readTree(runDir.resolve("run.json").toFile());
    int n = summary.get("config").get("grpo.steps").asInt();
    RunTraces traces = RunTraces.readDir(runDir);
    assertThat(traces.problems()).isEmpty();
    TraceQuality quality = TraceQuality.of(traces.spans());
    assertThat(quality.generationCoverage()).hasValue(1.0);
    assertThat(quality.disconnected()).isEmpty();
    assertThat(quality.connectedness()).hasValue(1.0);

    List<SpanRecord> python = traces.spans().stream()
        .filter(s -> "python".equals(s.resource().get("telemetry.sdk.language"))).toList();
    Set<String> roles = python.stream().map(SpanRecord::role).collect(Collectors.toSet());
    assertThat(roles).containsExactlyInAnyOrder("generation_worker", "policy_trainer");
    int prompts = summary.get("config").get("grpo.prompts_per_step").asInt();
    int group = summary.get("config").get("grpo.group_size").asInt();
    List<SpanRecord> engine = traces.named("llm_request");
    assertThat(engine).hasSizeGreaterThanOrEqualTo(n * prompts * group)
        .allSatisfy(e -> assertThat(e.role()).isEqualTo("generation_worker"));
    Map<String, SpanRecord> byId = traces.byId();
    String workerSpan = mode.equals("sync") ? "rl.worker.generate" : "rl.worker.generate_async";
    assertThat(engine).allSatisfy(e -> assertThat(byId.get(e.parentSpanId()).name()).isEqualTo(workerSpan));
    assertThat(traces.named("rl.trainer.train")).hasSize(n).allSatisfy(t -> {
      assertThat(t.role()).isEqualTo("policy_trainer");
      assertThat(byId.get(t.parentSpanId()).name()).isEqualTo("rl.grpo.policy_training");
    });
    // refit: the trainer's weights, one object passed by reference to every worker, inside rl.grpo.refit
    List<SpanRecord> updates = traces.named("rl.worker.update_weights");
    assertThat(updates).isNotEmpty().allSatisfy(u -> {
      assertThat(u.role()).isEqualTo("generation_worker");
      assertThat(quality.hasAncestor(u, a -> a.name().equals("rl.grpo.refit"))).isTrue();
    });
    // its stages: the trainer gathers and serialises each version once, each worker loads the same bytes
    List<SpanRecord> gathers = traces.named("rl.refit.gather");
    assertThat(gathers).isNotEmpty().allSatisfy(g -> {
      assertThat(g.role()).isEqualTo("policy_trainer");
      assertThat(quality.hasAncestor(g, a -> a.name().equals("rl.grpo.refit"))).isTrue();
    });
    Set<Object> blobSizes = gathers.stream().map(g -> g.attributes().get("rl.refit.bytes")).collect(Collectors.toSet());
    assertThat(traces.named("rl.refit.load")).hasSize(updates.size()).allSatisfy(l -> {
      assertThat(byId.get(l.parentSpanId()).name()).isEqualTo("rl.worker.update_weights");
      assertThat(blobSizes).contains(l.attributes().get("rl.refit.bytes"));
    });
    // the last step's checkpoint: the Python trainer's weights file, completed by its checkpoint.json
    java.io.File[] ckpts = runDir.resolve("checkpoints").toFile().listFiles();
    assertThat(ckpts).isNotEmpty().allSatisfy(d -> assertThat(d.list()).contains("checkpoint.json")
        .anySatisfy(f -> assertThat(f).endsWith(".pt")));
    return traces;
  }

  @Test
  void run_javaEngineWithPythonTrainer_isRejectedBeforeRayStartsInOneLine() throws Exception {
    RavelCommand.Result r = RavelCommand.run(TestEnv.clean(), 60, "run", example(), "generation.runtime=java",
        "telemetry.runs_dir=" + runs);
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.stderr().lines().filter(l -> !l.startsWith("SLF4J: "))).hasSize(1).first().asString()
        .startsWith("ravel: invalid configuration: trainer.runtime: is python but generation.runtime is java")
        .contains("same model family");
    assertThat(r.stdout()).doesNotContain("Ray");
  }

  /**
   * The GRPO and optimiser settings reach each runtime's trainer through the run config (the Python run, every
   * engine request traced, also shows the spans of sync, as the async run does): a short sync run with two
   * PPO epochs, micro-batches, a linear schedule after one warmup step, Dr. GRPO's loss, clip-higher, the dual clip
   * and TIS reports, per step in {@code steps.jsonl}, two optimizer steps, the scheduled learning rate (T = 4 steps
   * x 2 epochs, W = 1 x 2: factors 0/2, (8-2)/6, (8-4)/6, (8-6)/6 at optimizer steps 0, 2, 4, 6), every sequence
   * kept, and ratios away from 1 once the first pass of a step with signal has moved the weights.
   */
  @ParameterizedTest
  @ValueSource(strings = {"java", "python"})
  void run_grpoSettingsReachTheTrainer(String runtime) throws Exception {
    String id = "it-settings-" + runtime;
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 600, "run", example(), "run.mode=sync",
        "generation.runtime=" + runtime, "trainer.runtime=" + runtime, "generation.workers=1", "grpo.steps=4",
        "grpo.prompts_per_step=32", "grpo.group_size=8", "grpo.learning_rate=0.01", "grpo.ppo_epochs=2",
        "trainer.micro_batch_size=64", "trainer.lr_scheduler=linear", "trainer.warmup_steps=1",
        "grpo.loss_type=dr_grpo", "grpo.scale_rewards=none", "grpo.clip_epsilon_high=0.28", "grpo.clip_ratio_c=3",
        "grpo.tis_cap=2", "telemetry.run_id=" + id, "telemetry.runs_dir=" + runs, "telemetry.engine_sample_ratio=1.0");
    assertThat(r.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
    List<dev.ravel.telemetry.runs.StepRecord> steps = new ArrayList<>();
    for (String line : java.nio.file.Files.readAllLines(runs.resolve(id).resolve("steps.jsonl"))) {
      steps.add(dev.ravel.telemetry.runs.StepRecord.parse(line));
    }
    assertThat(steps).hasSize(4).allSatisfy(st -> {
      assertThat(st.update()).as("step %d's update", st.step()).isNotNull();
      assertThat(st.update().epochs()).isEqualTo(2);
      assertThat(st.update().keptSequences()).isEqualTo(256);
      assertThat(st.update().entropy()).isPositive().isFinite();
      assertThat(st.update().tisTruncated()).isBetween(0.0, 1.0);
    });
    // the step spans say so too
    List<SpanRecord> stepSpans = RunTraces.readDir(runs.resolve(id)).named("rl.grpo.step");
    assertThat(stepSpans).hasSize(4).allSatisfy(sp -> assertThat(sp.attributes().get("rl.train.epochs")).isEqualTo(2L));
    assertThat(steps.stream().map(st -> st.update().learningRate()).toList())
        .usingElementComparator((a, b) -> Math.abs(a - b) < 1e-12 ? 0 : Double.compare(a, b))
        .containsExactly(0.0, 0.01, 0.01 * 4 / 6, 0.01 * 2 / 6);
    // a fresh policy rarely answers right: a step whose groups all scored alike has no gradient and moves nothing
    // (the run is seeded, so which steps have signal is fixed); from step 2 on, those with signal move the weights
    // in their first pass, and their second pass sees ratios away from 1
    List<dev.ravel.telemetry.runs.StepRecord> withSignal = steps.subList(1, 4).stream()
        .filter(st -> st.update().zeroAdvantageGroups() < 32).toList();
    assertThat(withSignal).as("steps 2-4 with a group that scored unevenly").isNotEmpty().allSatisfy(st -> {
      assertThat(st.update().gradNorm()).isPositive().isFinite();
      assertThat(Math.abs(st.update().ratioMax() - 1)).as("step %d's largest ratio", st.step()).isGreaterThan(1e-4);
    });
    if (runtime.equals("python")) {
      assertPythonSpansInTheirStepsTraces(runs.resolve(id), "sync");
    }
  }

  private static String example() {
    return Path.of(System.getProperty("ravel.home"), "examples/grpo-python.yaml").toString();
  }
}
