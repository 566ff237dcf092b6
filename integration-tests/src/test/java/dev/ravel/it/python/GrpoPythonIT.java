package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
 * the GRPO loop with Ravel's Python generation workers (transformers) and Python trainer (PyTorch); the reward
 * rises, and every Python span sits in its step's trace. The margin: per step the mean is over 32 groups of 8,
 * so a 3-step mean has a standard error of at most sqrt(0.25 / 32 / 3) = 0.051, the difference of two at most
 * 0.072; 0.3 is over 4 of those.
 */
final class GrpoPythonIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  static Path runs;

  @ParameterizedTest
  @ValueSource(strings = {"sync", "async"})
  void run_rewardRisesAndPythonSpansAreInTheirStepsTraces(String mode) throws Exception {
    String id = "it-python-" + mode;
    // async trains on trajectories up to a version old and learns more slowly: 50 steps to sync's 40
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 900, "run", example(), "run.mode=" + mode,
        "grpo.steps=" + (mode.equals("sync") ? 40 : 50), "telemetry.run_id=" + id, "telemetry.runs_dir=" + runs,
        "telemetry.engine_sample_ratio=1.0");
    assertThat(r.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
    Path runDir = runs.resolve(id);

    JsonNode summary = JSON.readTree(runDir.resolve("run.json").toFile());
    List<Double> rewards = new ArrayList<>();
    summary.get("step_metrics").forEach(m -> rewards.add(m.get("rewardMean").asDouble()));
    int n = rewards.size();
    assertThat(n).isEqualTo(summary.get("config").get("grpo.steps").asInt());
    double first = rewards.subList(0, 3).stream().mapToDouble(Double::doubleValue).average().orElseThrow();
    double last = rewards.subList(n - 3, n).stream().mapToDouble(Double::doubleValue).average().orElseThrow();
    System.out.printf("python workers, %s: reward first 3 steps %.3f, last 3 steps %.3f%n", mode, first, last);
    assertThat(last - first).isGreaterThan(0.3);

    RunTraces traces = RunTraces.readDir(runDir);
    assertThat(traces.problems()).isEmpty();
    TraceQuality quality = TraceQuality.of(traces.spans());
    assertThat(quality.generationCoverage()).isEqualTo(1.0);
    assertThat(quality.disconnected()).isEmpty();
    assertThat(quality.connectedness()).isEqualTo(1.0);

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
    // the last step's checkpoint: the Python trainer's weights file, completed by its checkpoint.json
    java.io.File[] ckpts = runDir.resolve("checkpoints").toFile().listFiles();
    assertThat(ckpts).isNotEmpty().allSatisfy(d -> assertThat(d.list()).contains("checkpoint.json")
        .anySatisfy(f -> assertThat(f).endsWith(".pt")));
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

  private static String example() {
    return Path.of(System.getProperty("ravel.home"), "examples/grpo-python.yaml").toString();
  }
}
