package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.RayVenvPython;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.runs.SampleRecord;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Your model, data and reward, as a user gives them: a real Hugging Face checkpoint folder (a tokenizer trained
 * with the tokenizers library, a random-init Qwen2 saved with save_pretrained: tests/hf_fixture.py), a JSON
 * Lines file of text sums and a reward function in a folder of the test's own, run by {@code bin/ravel run} on a
 * real Ray head. In the sync run the reward rises and so does the accuracy of greedy evaluation (a 3-step mean
 * has a standard error of at most sqrt(0.25 / 32 / 3) = 0.051, the difference of two at most 0.072: the margin of
 * 0.3 is over 4 of those; this seeded run's differences are about 0.6, reached by step 20 and flat since), every
 * step is one connected trace with the reward function's calls in it, and {@code ravel export} gives a folder
 * {@code AutoModelForCausalLM.from_pretrained} loads and generates from. The async run checks what async changes
 * on this path in a few steps: evaluation beside the collector of the weights published for its step, two reward
 * actors, traces; that async training learns is GrpoPythonIT's claim (its async run, 50 steps). Bad input is one
 * line naming the key, before Ray starts; a reward function that raises fails the run saying so.
 */
final class YourModelIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  static Path tmp;

  static Path model;
  static Path train;
  static Path code;

  @BeforeAll
  static void fixture() throws Exception {
    JsonNode made = JSON.readTree(RayVenvPython.run(tmp, List.of("tests/hf_fixture.py", tmp.resolve("hf").toString())).lines()
        .reduce((a, b) -> b).orElseThrow());
    model = Path.of(made.get("model").asText());
    train = Path.of(made.get("train").asText());
    code = Files.createDirectories(tmp.resolve("code"));
    Files.writeString(code.resolve("it_rewards.py"), """
        def first_answer(completions, answers):
            # 1 when the completion, up to its first space, is the answer
            return [1.0 if c.strip().split(" ")[0] == a else 0.0 for c, a in zip(completions, answers)]

        def broken(completions):
            raise ValueError("no answer here")

        def flaky(completions, answers, step):
            # the second call raises; the others give two named components
            if step == 2:
                raise RuntimeError("flaky service")
            return {"answer": [1.0 if c.strip().split(" ")[0] == a else 0.0 for c, a in zip(completions, answers)],
                    "brevity": [0.25] * len(completions)}

        def hangs(completions):
            import time
            time.sleep(3600)
        """);
  }

  /** The sync run learns (class comment); both modes' steps are connected traces and their checkpoints load. */
  @ParameterizedTest
  @ValueSource(strings = {"sync", "async"})
  void run_yourModelDataAndReward_trainsInConnectedTracesAndExportsAFolderFromPretrainedLoads(String mode)
      throws Exception {
    String id = "it-your-model-" + mode;
    Path runs = tmp.resolve("runs");
    // sync: the learning claims (class comment); async: 12 steps, evaluating at steps 1, 6 and 11
    boolean sync = mode.equals("sync");
    int n = sync ? 25 : 12;
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 900, "run", example(), "model.path=" + model,
        "data.train=[" + train + "]", "reward.function=it_rewards:first_answer", "reward.code_path=[" + code + "]",
        "run.mode=" + mode, "grpo.steps=" + n, "grpo.checkpoint_every=20", "telemetry.run_id=" + id,
        "telemetry.runs_dir=" + runs, "data.eval=[" + train + "]", "grpo.eval_every=" + (sync ? 10 : 5),
        // a few engine requests traced (the example's preset has none), so generation coverage is measured
        "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=0.02",
        // async: two reward actors share each batch
        "reward.workers=" + (sync ? 1 : 2));
    assertThat(r.exitCode()).as("exit code; stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
    assertThat(r.stdout()).contains("ravel: 25 prompts from " + train + "; reward it_rewards:first_answer");
    Path runDir = runs.resolve(id);

    RunRecord record = RunRecord.read(runDir).orElseThrow();
    List<StepRecord> steps = record.stepMetrics();
    assertThat(steps).hasSize(n);
    assertThat(steps).allSatisfy(s -> { // completion lengths, within the token budget (grpo.max_new_tokens: 4)
      assertThat(s.completions().maxTokens()).isBetween(1, 4);
      assertThat(s.completions().clipped()).isBetween(0, s.trajectories());
    });
    RunTraces traces = RunTraces.readDir(runDir);
    { // the 25 rows, greedily, at steps 1, 11 and 21 (sync) or 1, 6 and 11 (async: beside its collector)
      List<StepRecord> evaluated = steps.stream().filter(s -> s.eval() != null).toList();
      List<Integer> at = sync ? List.of(1, 11, 21) : List.of(1, 6, 11);
      assertThat(evaluated).extracting(StepRecord::step).containsExactlyElementsOf(at);
      assertThat(evaluated).allSatisfy(s -> assertThat(s.eval().completions()).isEqualTo(25));
      assertThat(steps.get(0).phases()).containsKey("eval");
      assertThat(traces.named("rl.grpo.evaluate")).hasSize(at.size());
      // each evaluation generates with the weights its step serves (step s: version s - 1, the trained ones after
      // step 1); the driver fails the step if a completion came from another version
      List<SpanRecord> evalGenerations = traces.named("rl.vllm.generate").stream()
          .filter(g -> "eval".equals(g.attributes().get("rl.generation.mode"))).toList();
      assertThat(evalGenerations).hasSize(at.size());
      Map<String, SpanRecord> stepOfTrace = new java.util.HashMap<>();
      traces.named("rl.grpo.step").forEach(st -> stepOfTrace.put(st.traceId(), st));
      assertThat(evalGenerations.stream().map(g -> List.of(stepOfTrace.get(g.traceId()).attributes().get("rl.step"),
          g.attributes().get("rl.weight_version"))).toList())
          .containsExactlyInAnyOrderElementsOf(at.stream().map(a -> List.<Object>of((long) a, (long) a - 1)).toList());
      if (sync) {
        double first = steps.subList(0, 3).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
        double last = steps.subList(n - 3, n).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
        double before = evaluated.get(0).eval().accuracy();
        double after = evaluated.get(evaluated.size() - 1).eval().accuracy();
        System.out.printf("your model, data and reward, sync: reward first 3 steps %.3f, last 3 steps %.3f; eval"
            + " accuracy (greedy, 25 prompts) step 1 %.2f, step %d %.2f%n", first, last, before,
            evaluated.get(evaluated.size() - 1).step(), after);
        assertThat(last - first).isGreaterThan(0.3);
        assertThat(after - before).isGreaterThan(0.3);
      }
    }
    // four completions a step kept as text, each reward the function's for its text
    List<SampleRecord> samples = Files.readAllLines(runDir.resolve("samples.jsonl")).stream()
        .map(SampleRecord::parse).toList();
    assertThat(samples).hasSize(4 * n).allSatisfy(x -> {
      assertThat(x.prompt()).matches("[0-4]\\+[0-4]=");
      assertThat(x.reward()).isEqualTo(x.completion().strip().split(" ")[0].equals(x.answer()) ? 1.0 : 0.0);
    });
    assertThat(samples.stream().filter(x -> x.step() == n)).hasSize(4);
    assertThat(steps).allSatisfy(s -> assertThat(s.rewards().failed()).isZero());
    RavelCommand.Result shown = RavelCommand.run(TestEnv.clean(), 120, "trace", id, "--step", Integer.toString(n),
        "--samples", "--plain", "--runs-dir", runs.toString());
    assertThat(shown.exitCode()).as("trace --samples; stderr:%n%s", shown.stderr()).isZero();
    assertThat(shown.stdout()).contains("samples of step " + n + " (4)")
        .contains("    prompt:     " + samples.get(samples.size() - 1).prompt());
    @SuppressWarnings("unchecked")
    Map<String, Object> data = (Map<String, Object>) record.details().get("data");
    assertThat(data).containsEntry("prompts", 25).containsEntry("dropped_too_long", 0)
        .containsEntry("reward_function", "it_rewards:first_answer");
    // n steps x 32 prompts over 25 rows: each epoch passes over every row once (25 steps: 32 epochs begun)
    assertThat(data).containsEntry("epochs_started", (n * 32 - 1) / 25 + 1);

    assertThat(traces.problems()).isEmpty();
    // the final account adds up over every process, Python ones per exporter as Java ones: every span ended
    // was exported to the file, and the folder holds exactly those
    @SuppressWarnings("unchecked")
    Map<String, Object> spans = (Map<String, Object>) ((Map<String, Object>) record.details().get("telemetry"))
        .get("spans");
    @SuppressWarnings("unchecked")
    Map<String, Map<String, Number>> exporters = (Map<String, Map<String, Number>>) spans.get("exporters");
    assertThat(exporters).containsOnlyKeys("file");
    assertThat(exporters.get("file").get("exported").longValue()).isEqualTo(((Number) spans.get("ended")).longValue())
        .isEqualTo(traces.spans().size());
    assertThat(r.stdout()).contains("spans: " + traces.spans().size() + " ended = " + traces.spans().size()
        + " exported + 0 failed + 0 dropped (file)");
    TraceQuality quality = TraceQuality.of(traces.spans());
    // over spans that exist: a few hundred sampled engine requests of ~10,000, and every worker call
    assertThat(quality.engineRequests()).isNotEmpty();
    assertThat(quality.generationCoverage()).hasValue(1.0);
    assertThat(quality.connectedness()).hasValue(1.0);
    List<SpanRecord> scores = traces.named("rl.reward.score");
    assertThat(scores).hasSizeGreaterThanOrEqualTo(n).allSatisfy(s -> {
      assertThat(s.role()).isEqualTo("reward_environment");
      assertThat(s.resource().get("telemetry.sdk.language")).isEqualTo("python");
      if (sync) { // (async: the collector's calls, some for a target step the run did not reach)
        assertThat(quality.hasAncestor(s, a -> a.name().equals("rl.grpo.step"))).isTrue();
      }
    });
    if (!sync) { // the collector's calls: what the export of the sync run shows holds here too
      assertThat(runDir.resolve("checkpoints/step-000012/hf/config.json")).isRegularFile();
      return;
    }

    Path out = tmp.resolve("exported");
    RavelCommand.Result export = RavelCommand.run(TestEnv.clean(), 120, "export", id, out.toString(),
        "--runs-dir", runs.toString());
    assertThat(export.exitCode()).as("export; stderr:%n%s", export.stderr()).isZero();
    assertThat(export.stdout()).contains("exported run " + id + " after step " + n);
    String generated = RayVenvPython.run(tmp, List.of("-c", """
        import sys
        from transformers import AutoModelForCausalLM, AutoTokenizer
        tok = AutoTokenizer.from_pretrained(sys.argv[1]); m = AutoModelForCausalLM.from_pretrained(sys.argv[1])
        ids = tok("3+4=", return_tensors="pt").input_ids
        out = m.generate(ids, max_new_tokens=2, do_sample=False, pad_token_id=tok.pad_token_id)
        print("generated", out.shape[1] - ids.shape[1])
        """, out.toString()));
    assertThat(generated).contains("generated ");

    RavelCommand.Result older = RavelCommand.run(TestEnv.clean(), 120, "export", id, tmp.resolve("at-20").toString(),
        "--step", "20", "--runs-dir", runs.toString());
    assertThat(older.exitCode()).isZero();
    RavelCommand.Result none = RavelCommand.run(TestEnv.clean(), 120, "export", id, tmp.resolve("at-7").toString(),
        "--step", "7", "--runs-dir", runs.toString());
    assertThat(none.exitCode()).isEqualTo(2);
    assertThat(none.stderr()).contains("--step: run " + id + " has no complete checkpoint after step 7 (kept: [20, " + n + "])");
  }

  @Test
  void run_badModelDataOrReward_isOneLineNamingTheKeyBeforeRayStarts() throws Exception {
    Path noPrompt = tmp.resolve("no-prompt.jsonl");
    Files.writeString(noPrompt, "{\"prompt\": \"1+1=\", \"answer\": \"2\"}\n{\"question\": \"2+2=\", \"answer\": \"4\"}\n");
    Path empty = Files.writeString(tmp.resolve("empty.jsonl"), "");
    List<List<String>> cases = List.of(
        List.of("model.path=Qwen/Qwen2.5-0.5B", "model.path: 'Qwen/Qwen2.5-0.5B' is not a folder here; it looks like"
            + " a Hugging Face hub id, and Ravel downloads nothing"),
        List.of("model.path=" + tmp.resolve("nothing"), "model.path: '" + tmp.resolve("nothing") + "' does not exist"),
        List.of("data.train=[" + noPrompt + "]", "data.train: " + noPrompt + ":2: no 'prompt' field"),
        List.of("data.train=[" + empty + "]", "data.train: " + empty + ": no rows (an empty file)"),
        List.of("data.train=[" + tmp.resolve("absent.jsonl") + "]", "data.train: " + tmp.resolve("absent.jsonl")
            + ": no such file or folder"),
        List.of("reward.function=nowhere:f", "reward.function: nowhere:f: cannot import nowhere"),
        List.of("reward.function=it_rewards:missing", "reward.function: it_rewards:missing: it_rewards has no 'missing'"));
    for (List<String> c : cases) {
      List<String> args = new java.util.ArrayList<>(List.of("run", example(), "model.path=" + model,
          "data.train=[" + train + "]", "reward.code_path=[" + code + "]", "telemetry.runs_dir=" + tmp.resolve("bad")));
      args.add(c.get(0));
      RavelCommand.Result r = RavelCommand.run(TestEnv.clean(), 300, args.toArray(String[]::new));
      assertThat(r.exitCode()).as("%s: stderr %s", c.get(0), r.stderr()).isEqualTo(2);
      assertThat(r.stderr().lines().filter(l -> !l.startsWith("SLF4J: "))).as(c.get(0)).hasSize(1).first()
          .asString().startsWith("ravel: invalid configuration: " + c.get(1));
      assertThat(r.stdout()).as(c.get(0)).doesNotContain("Ray head started");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"broken", "hangs"})
  void run_rewardFunctionThatRaisesOrHangs_failsTheStepNamingIt(String function) throws Exception {
    Path runs = tmp.resolve("runs-" + function);
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 600, "run", example(), "model.path=" + model,
        "data.train=[" + train + "]", "reward.function=it_rewards:" + function, "reward.code_path=[" + code + "]",
        "reward.timeout_s=2", "grpo.steps=2", "generation.workers=1", "telemetry.run_id=it-" + function + "-reward",
        "telemetry.runs_dir=" + runs);
    assertThat(r.exitCode()).as("stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isEqualTo(1);
    assertThat(r.stdout() + r.stderr()).contains(function.equals("broken")
        ? "reward.function it_rewards:broken: raised ValueError: no answer here"
        : "reward.function it_rewards:hangs: a call took more than reward.timeout_s = 2 s (256 completions)");
    assertThat(RunRecord.read(runs.resolve("it-" + function + "-reward")).orElseThrow().status())
        .isEqualTo(RunRecord.Status.FAILED);
  }

  @Test
  void run_rewardComponentsAndOnErrorZero_areLoggedPerStepAndCounted() throws Exception {
    Path runs = tmp.resolve("runs-flaky");
    String id = "it-flaky-reward";
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 600, "run", example(), "model.path=" + model,
        "data.train=[" + train + "]", "reward.function=it_rewards:flaky", "reward.code_path=[" + code + "]",
        "reward.on_error=zero", "grpo.steps=3", "generation.workers=1", "telemetry.run_id=" + id,
        "telemetry.runs_dir=" + runs);
    assertThat(r.exitCode()).as("stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isZero();
    List<StepRecord> steps = RunRecord.read(runs.resolve(id)).orElseThrow().stepMetrics();
    assertThat(steps).hasSize(3);
    for (int i : new int[] {0, 2}) { // the components' means add up to the mean reward
      StepRecord s = steps.get(i);
      assertThat(s.rewards().components()).containsOnlyKeys("answer", "brevity").containsEntry("brevity", 0.25);
      assertThat(s.rewards().components().get("answer") + 0.25).isCloseTo(s.rewardMean(),
          org.assertj.core.data.Offset.offset(1e-9));
      assertThat(s.rewards().failed()).isZero();
    }
    StepRecord failed = steps.get(1); // the second call raised: its 32 x 8 completions scored 0, counted
    assertThat(failed.rewards().failed()).isEqualTo(failed.trajectories()).isEqualTo(256);
    assertThat(failed.rewardMean()).isZero();
    assertThat(failed.rewards().components()).isEmpty();
    List<SpanRecord> calls = RunTraces.readDir(runs.resolve(id)).named("rl.reward.score");
    assertThat(calls).hasSize(3).allSatisfy(s ->
        assertThat(s.attributes()).containsEntry("rl.reward.function", "it_rewards:flaky"));
    assertThat(calls).filteredOn(s -> s.attributes().containsKey("rl.reward.failed")).hasSize(1).first()
        .satisfies(s -> assertThat(String.valueOf(s.attributes().get("rl.reward.failed"))).isEqualTo("256"));
  }

  private static String example() {
    return Path.of(System.getProperty("ravel.home"), "examples/grpo-hf.yaml").toString();
  }
}
