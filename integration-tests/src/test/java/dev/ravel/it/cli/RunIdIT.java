package dev.ravel.it.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One run id, one run: while a driver runs, a second {@code bin/ravel run} with the same {@code telemetry.run_id}
 * stops before it starts anything (exit 2, naming the first driver's PID), the first completes with each of its
 * steps logged once, and a later run with that id is refused too (its folder holds a run's records) unless it
 * resumes.
 */
final class RunIdIT {
  @TempDir
  Path runs;

  @Test
  void run_aSecondDriverWithTheSameRunId_isRefusedAndTheFirstRunKeepsItsRecords() throws Exception {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    String config = home.resolve("examples/grpo-sync.yaml").toString();
    List<String> cmd = new ArrayList<>(List.of(home.resolve("bin/ravel").toString(), "run", config, "grpo.steps=40",
        "telemetry.run_id=one-id", "telemetry.runs_dir=" + runs));
    Path out = Files.createTempFile(runs, "first", ".out");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
    pb.environment().clear();
    pb.environment().putAll(SharedRayHead.env());
    Process first = pb.start();
    try {
      // the first driver holds the folder once it announced its run (before its head or first step)
      RavelCommand.awaitOutput(out, first, Pattern.compile("ravel: run one-id"), "", 300);
      Path lock = runs.resolve("one-id/.driver.lock");
      assertThat(lock).exists();

      RavelCommand.Result second = RavelCommand.run(SharedRayHead.env(), 120, "run", config, "grpo.steps=6",
          "telemetry.run_id=one-id", "telemetry.runs_dir=" + runs);
      if (first.isAlive()) { // (a first run that ended meanwhile left records: refused for that reason instead)
        assertThat(second.exitCode()).as("stderr: %s", second.stderr()).isEqualTo(2);
        assertThat(second.stderr()).contains("ravel: invalid configuration: telemetry.run_id: run 'one-id'");
      } else {
        assertThat(second.exitCode()).isEqualTo(2);
      }
      assertThat(second.stdout()).doesNotContain("Ray head started");

      assertThat(first.waitFor(600, TimeUnit.SECONDS)).as("the first run ends").isTrue();
      assertThat(first.exitValue()).as(Files.readString(out)).isZero();
    } finally {
      first.destroyForcibly();
    }
    List<String> lines = Files.readAllLines(runs.resolve("one-id/steps.jsonl"));
    assertThat(lines).hasSize(40);
    assertThat(runs.resolve("one-id/.driver.lock")).doesNotExist();

    RavelCommand.Result later = RavelCommand.run(Map.copyOf(SharedRayHead.env()), 120, "run", config,
        "telemetry.run_id=one-id", "telemetry.runs_dir=" + runs);
    assertThat(later.exitCode()).isEqualTo(2);
    assertThat(later.stderr()).contains("telemetry.run_id: run 'one-id' already has records in")
        .contains("--resume one-id");
  }
}
