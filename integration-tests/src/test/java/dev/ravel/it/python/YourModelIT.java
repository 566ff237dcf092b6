package dev.ravel.it.python;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Your model, data and reward, as a user gives them: a real Hugging Face checkpoint folder (a tokenizer trained
 * with the tokenizers library, a random-init Qwen2 saved with save_pretrained: tests/hf_fixture.py), a JSON
 * Lines file of text sums and a reward function in a folder of the test's own, run by {@code bin/ravel run} on a
 * real Ray head. The reward rises (the margin is GrpoPythonIT's: 0.3 is over 4 standard errors of the difference
 * of two 3-step means of 32 groups of 8), every step is one connected trace with the reward function's calls in
 * it, and {@code ravel export} gives a folder {@code AutoModelForCausalLM.from_pretrained} loads and generates
 * from. Bad input is one line naming the key, before Ray starts; a reward function that raises fails the run
 * saying so.
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
    JsonNode made = JSON.readTree(python(List.of("tests/hf_fixture.py", tmp.resolve("hf").toString())).lines()
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
        """);
  }

  @ParameterizedTest
  @ValueSource(strings = {"sync", "async"})
  void run_yourModelDataAndReward_learnsInConnectedTracesAndExportsAFolderFromPretrainedLoads(String mode)
      throws Exception {
    String id = "it-your-model-" + mode;
    Path runs = tmp.resolve("runs");
    // async trains on trajectories up to a version old and learns more slowly: 50 steps to sync's 40
    int n = mode.equals("sync") ? 40 : 50;
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 900, "run", example(), "model.path=" + model,
        "data.train=[" + train + "]", "reward.function=it_rewards:first_answer", "reward.code_path=[" + code + "]",
        "run.mode=" + mode, "grpo.steps=" + n, "grpo.checkpoint_every=20", "telemetry.run_id=" + id,
        "telemetry.runs_dir=" + runs, mode.equals("sync") ? "data.eval=[" + train + "]" : "data.eval=[]",
        mode.equals("sync") ? "grpo.eval_every=10" : "grpo.eval_every=0");
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
    double first = steps.subList(0, 3).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    double last = steps.subList(n - 3, n).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    System.out.printf("your model, data and reward, %s: reward first 3 steps %.3f, last 3 steps %.3f%n", mode, first,
        last);
    assertThat(last - first).isGreaterThan(0.3);
    if (mode.equals("sync")) { // the 25 rows, greedily, at steps 1, 11, 21 and 31
      List<StepRecord> evaluated = steps.stream().filter(s -> s.eval() != null).toList();
      assertThat(evaluated).extracting(StepRecord::step).containsExactly(1, 11, 21, 31);
      assertThat(evaluated).allSatisfy(s -> assertThat(s.eval().completions()).isEqualTo(25));
      double before = evaluated.get(0).eval().accuracy();
      double after = evaluated.get(3).eval().accuracy();
      System.out.printf("your model, eval accuracy (greedy, 25 prompts): step 1 %.2f, step 31 %.2f%n", before, after);
      assertThat(after - before).isGreaterThan(0.3);
      assertThat(steps.get(0).phases()).containsKey("eval");
      assertThat(RunTraces.readDir(runDir).named("rl.grpo.evaluate")).hasSize(4);
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> data = (Map<String, Object>) record.details().get("data");
    assertThat(data).containsEntry("prompts", 25).containsEntry("dropped_too_long", 0)
        .containsEntry("reward_function", "it_rewards:first_answer");
    // n steps x 32 prompts over 25 rows: each epoch passes over every row once (40 steps: 52 epochs begun)
    assertThat(data).containsEntry("epochs_started", (n * 32 - 1) / 25 + 1);

    RunTraces traces = RunTraces.readDir(runDir);
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
    assertThat(quality.generationCoverage()).isEqualTo(1.0);
    assertThat(quality.connectedness()).isEqualTo(1.0);
    List<SpanRecord> scores = traces.named("rl.reward.score");
    assertThat(scores).hasSizeGreaterThanOrEqualTo(n).allSatisfy(s -> {
      assertThat(s.role()).isEqualTo("reward_environment");
      assertThat(s.resource().get("telemetry.sdk.language")).isEqualTo("python");
      if (mode.equals("sync")) { // (async: the collector's calls, some for a target step the run did not reach)
        assertThat(quality.hasAncestor(s, a -> a.name().equals("rl.grpo.step"))).isTrue();
      }
    });
    if (mode.equals("async")) { // the collector's calls: what the export of the sync run shows holds here too
      assertThat(runDir.resolve("checkpoints/step-000050/hf/config.json")).isRegularFile();
      return;
    }

    Path out = tmp.resolve("exported");
    RavelCommand.Result export = RavelCommand.run(TestEnv.clean(), 120, "export", id, out.toString(),
        "--runs-dir", runs.toString());
    assertThat(export.exitCode()).as("export; stderr:%n%s", export.stderr()).isZero();
    assertThat(export.stdout()).contains("exported run " + id + " after step 40");
    String generated = python(List.of("-c", """
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
    assertThat(none.stderr()).contains("--step: run " + id + " has no complete checkpoint after step 7 (kept: [20, 40])");
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

  @Test
  void run_rewardFunctionThatRaises_failsTheStepWithItsMessage() throws Exception {
    Path runs = tmp.resolve("runs-broken");
    RavelCommand.Result r = RavelCommand.run(SharedRayHead.env(), 600, "run", example(), "model.path=" + model,
        "data.train=[" + train + "]", "reward.function=it_rewards:broken", "reward.code_path=[" + code + "]",
        "grpo.steps=2", "telemetry.run_id=it-broken-reward", "telemetry.runs_dir=" + runs);
    assertThat(r.exitCode()).as("stdout:%n%s%nstderr:%n%s", r.stdout(), r.stderr()).isEqualTo(1);
    assertThat(r.stdout() + r.stderr()).contains("reward.function it_rewards:broken: raised ValueError: no answer here");
    assertThat(RunRecord.read(runs.resolve("it-broken-reward")).orElseThrow().status())
        .isEqualTo(RunRecord.Status.FAILED);
  }

  private static String example() {
    return Path.of(System.getProperty("ravel.home"), "examples/grpo-hf.yaml").toString();
  }

  /** Runs the Ray virtualenv's Python in the Python package's folder; its stdout. */
  private static String python(List<String> args) throws IOException, InterruptedException {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getenv("RAVEL_RAY_VENV"), "bin", "python")
        .toString()));
    cmd.addAll(args);
    Path out = Files.createTempFile(tmp, "py", ".out");
    Path err = Files.createTempFile(tmp, "py", ".err");
    Process p = new ProcessBuilder(cmd).directory(home.resolve("workers/src/main/python").toFile())
        .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    try {
      assertThat(p.waitFor(300, TimeUnit.SECONDS)).as("python %s finished", args).isTrue();
      assertThat(p.exitValue()).as("python %s; stderr:%n%s", args, Files.readString(err)).isZero();
      return Files.readString(out, StandardCharsets.UTF_8);
    } finally {
      p.destroyForcibly();
    }
  }
}
