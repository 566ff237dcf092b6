package dev.ravel.it.fault;

import dev.ravel.telemetry.process.ProcessIdentity;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.it.support.PhaseHold;
import dev.ravel.it.support.Procs;
import dev.ravel.telemetry.spans.Phase;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import dev.ravel.it.support.TestEnv;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sync run whose driver is killed with SIGKILL in step 7 of 10 (held before its generation, so the kill lands
 * there), resumed with {@code --resume}, ends with
 * weights bit-identical to an uninterrupted 10-step run's: both through {@code bin/ravel}, each on its own
 * local head.
 */
final class ResumeIT {
  private static final Pattern HEAD = Pattern.compile("Ray head started at 127\\.0\\.0\\.1:(\\d+) \\(pid (\\d+),");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int STEPS = 10;

  @TempDir
  Path tmp;

  private List<String> runArgs(String runId) {
    return List.of("run", home().resolve("examples/grpo-sync.yaml").toString(), "grpo.steps=" + STEPS,
        "grpo.checkpoint_every=2", "grpo.prompts_per_step=8", "telemetry.engine_tracing=false",
        "telemetry.runs_dir=" + tmp.resolve("runs"), "telemetry.run_id=" + runId);
  }

  @Test
  void resume_afterTheDriversSigkill_endsWithTheWeightsOfTheUninterruptedRun() throws Exception {
    RavelCommand.Result straight = RavelCommand.run(SharedRayHead.env(), 300, runArgs("straight").toArray(String[]::new));
    assertThat(straight.exitCode()).as(straight.stdout() + straight.stderr()).isZero();
    JsonNode full = runJson("straight");
    String expected = full.get("final_weights_sha256").asText();
    assertThat(expected).hasSize(64);

    // the same run, killed in its 7th step's generation (held there, so the kill lands in that phase)
    killAt(runArgs("killed"), 7, Phase.GENERATION);
    Path runDir = tmp.resolve("runs").resolve("killed");
    assertThat(Files.exists(runDir.resolve("run.json"))).as("a SIGKILLed driver writes no run.json").isFalse();

    List<String> resumeArgs = new ArrayList<>(runArgs("killed"));
    resumeArgs.remove("telemetry.run_id=killed");
    resumeArgs.addAll(List.of("--resume", "killed"));
    RavelCommand.Result resumed = RavelCommand.run(TestEnv.clean(), 300, resumeArgs.toArray(String[]::new));
    assertThat(resumed.exitCode()).as(resumed.stdout() + resumed.stderr()).isZero();
    Matcher after = Pattern.compile("resumed after step (\\d+)").matcher(resumed.stdout());
    assertThat(after.find()).as(resumed.stdout()).isTrue();
    int from = Integer.parseInt(after.group(1));
    assertThat(from).as("the newest checkpoint: every 2 steps, the 6th complete before step 7 began").isEqualTo(6);

    JsonNode run = runJson("killed");
    assertThat(run.get("status").asText()).isEqualTo("succeeded");
    assertThat(run.get("run_id").asText()).isEqualTo("killed");
    assertThat(run.get("resumed_after_step").asInt()).isEqualTo(from);
    assertThat(run.get("steps").asInt()).isEqualTo(STEPS - from);
    assertThat(run.get("final_weights_sha256").asText()).isEqualTo(expected);
    // steps.jsonl has each step once: the killed attempt's steps after the checkpoint were dropped
    List<Integer> logged = new ArrayList<>();
    for (String line : Files.readAllLines(runDir.resolve("steps.jsonl"))) {
      logged.add(JSON.readTree(line).get("step").asInt());
    }
    assertThat(logged).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
    // the per-step rewards of the resumed steps are the uninterrupted run's too
    List<String> straightLines = Files.readAllLines(tmp.resolve("runs").resolve("straight").resolve("steps.jsonl"));
    List<String> resumedLines = Files.readAllLines(runDir.resolve("steps.jsonl"));
    for (int i = 0; i < STEPS; i++) {
      assertThat(JSON.readTree(resumedLines.get(i)).get("rewardMean").asDouble()).as("step %d", i + 1)
          .isEqualTo(JSON.readTree(straightLines.get(i)).get("rewardMean").asDouble());
    }
    // the newest three checkpoints are kept
    try (var s = Files.list(runDir.resolve("checkpoints"))) {
      assertThat(s.map(p -> p.getFileName().toString()).sorted().toList())
          .containsExactly("step-000006", "step-000008", "step-000010");
    }
  }

  /**
   * The same for Ravel's Python workers on the CPU: a sync run whose driver is SIGKILLed in step 5 of 8 and is
   * then resumed ends with the weights (their digest, {@code policy.weights_sha256}) and the per-step rewards of the
   * uninterrupted run, the resumed trainer going on from its checkpoint's AdamW state and schedule position
   * ({@code trainer.lr_scheduler=cosine}) and the resumed workers from its weights.
   */
  @Test
  void resume_ofAPythonRunAfterTheDriversSigkill_endsWithTheWeightsOfTheUninterruptedRun() throws Exception {
    int steps = 8;
    java.util.function.Function<String, List<String>> args = id -> List.of("run",
        home().resolve("examples/grpo-python.yaml").toString(), "grpo.steps=" + steps, "grpo.checkpoint_every=2",
        "grpo.prompts_per_step=8", "grpo.group_size=4", "trainer.lr_scheduler=cosine", "trainer.warmup_steps=1",
        "telemetry.engine_tracing=false", "telemetry.runs_dir=" + tmp.resolve("runs"), "telemetry.run_id=" + id);
    RavelCommand.Result straight = RavelCommand.run(SharedRayHead.env(), 600, args.apply("py-straight")
        .toArray(String[]::new));
    assertThat(straight.exitCode()).as(straight.stdout() + straight.stderr()).isZero();
    String expected = runJson("py-straight").get("final_weights_sha256").asText();
    assertThat(expected).hasSize(64);

    killAt(args.apply("py-killed"), 5, Phase.GENERATION);
    List<String> resumeArgs = new ArrayList<>(args.apply("py-killed"));
    resumeArgs.remove("telemetry.run_id=py-killed");
    resumeArgs.addAll(List.of("--resume", "py-killed"));
    RavelCommand.Result resumed = RavelCommand.run(SharedRayHead.env(), 600, resumeArgs.toArray(String[]::new));
    assertThat(resumed.exitCode()).as(resumed.stdout() + resumed.stderr()).isZero();
    Matcher after = Pattern.compile("resumed after step (\\d+)").matcher(resumed.stdout());
    assertThat(after.find()).as(resumed.stdout()).isTrue();
    assertThat(Integer.parseInt(after.group(1))).as("the newest checkpoint").isEqualTo(4);

    JsonNode run = runJson("py-killed");
    assertThat(run.get("status").asText()).isEqualTo("succeeded");
    assertThat(run.get("final_weights_sha256").asText()).isEqualTo(expected);
    List<String> straightLines = Files.readAllLines(tmp.resolve("runs").resolve("py-straight").resolve("steps.jsonl"));
    List<String> resumedLines = Files.readAllLines(tmp.resolve("runs").resolve("py-killed").resolve("steps.jsonl"));
    assertThat(resumedLines).hasSize(steps);
    for (int i = 0; i < steps; i++) {
      JsonNode a = JSON.readTree(straightLines.get(i));
      JsonNode b = JSON.readTree(resumedLines.get(i));
      assertThat(b.get("rewardMean").asDouble()).as("step %d's reward", i + 1).isEqualTo(a.get("rewardMean").asDouble());
      assertThat(b.get("update").get("learningRate").asDouble()).as("step %d's learning rate", i + 1)
          .isEqualTo(a.get("update").get("learningRate").asDouble());
    }
    // the same prompts and completions after the resume: samples.jsonl holds the uninterrupted run's lines, each
    // step's once (the killed attempt's lines after the checkpoint were dropped)
    assertThat(Files.readAllLines(tmp.resolve("runs").resolve("py-killed").resolve("samples.jsonl")))
        .hasSize(4 * steps)
        .containsExactlyElementsOf(Files.readAllLines(tmp.resolve("runs").resolve("py-straight").resolve("samples.jsonl")));
  }

  /**
   * Starts {@code bin/ravel} with {@code args} on its own head and SIGKILLs the driver while it is held just before
   * step {@code step}'s {@code phase} (a {@link PhaseHold}): the kill lands there however fast the machine is.
   */
  private void killAt(List<String> args, long step, Phase phase) throws Exception {
    PhaseHold hold = PhaseHold.arm(tmp.resolve("gates-" + step), step, phase);
    Path out = Files.createTempFile(tmp, "driver", ".out");
    List<String> cmd = new ArrayList<>(List.of(home().resolve("bin/ravel").toString()));
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
    pb.environment().clear();
    pb.environment().putAll(TestEnv.clean());
    pb.environment().putAll(hold.env());
    Process driver = pb.start();
    long headPid = -1;
    try {
      hold.awaitHeld(driver, out, 300);
      Matcher m = HEAD.matcher(Files.readString(out));
      assertThat(m.find()).as("the driver's head line").isTrue();
      headPid = Long.parseLong(m.group(2));
      List<Long> head = new ArrayList<>(Procs.group(headPid));
      // SIGKILL through the JDK's handle of its own child: it signals only while that child is unreaped, so the
      // PID cannot have passed to another process
      driver.destroyForcibly();
      assertThat(driver.waitFor(30, TimeUnit.SECONDS)).isTrue();
      // its supervisor polls every 0.5 s and gives the group 4 s after SIGTERM, about 5 s in all: ten times that
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (System.nanoTime() < deadline && !Procs.alive(head).isEmpty()) {
        Thread.sleep(200);
      }
      assertThat(Procs.alive(head)).as("the killed driver's head").isEmpty();
    } finally {
      if (driver.isAlive()) {
        driver.destroyForcibly();
      }
      if (headPid > 0) {
        for (long pid : Procs.group(headPid)) {
          ProcessIdentity.of(pid).ifPresent(ProcessIdentity::kill); // listed just now, signalled only if still it
        }
      }
    }
  }

  private JsonNode runJson(String runId) throws Exception {
    return JSON.readTree(tmp.resolve("runs").resolve(runId).resolve("run.json").toFile());
  }

  private static Path home() {
    return Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
  }
}
