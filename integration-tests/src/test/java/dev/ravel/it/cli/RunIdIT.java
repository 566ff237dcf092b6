package dev.ravel.it.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.SharedRayHead;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One run id, one run. While a process holds a run folder's {@code .driver.lock} (here this test's JVM, holding
 * the same lock a live driver holds, so nothing depends on how long a run takes), {@code bin/ravel run} with that
 * {@code telemetry.run_id} stops before it starts anything: exit 2, naming the holder's PID. Released, the run
 * completes with each step logged once and removes its lock; a later run with the id is refused because the
 * folder holds a run's records, unless it resumes.
 */
final class RunIdIT {
  @TempDir
  Path runs;

  @Test
  void run_aRunIdHeldByALiveDriverOrWithRecords_isRefusedAndTheRunKeepsItsRecordsOnce() throws Exception {
    Path home = Path.of(System.getProperty("ravel.home", ".")).toAbsolutePath().normalize();
    String config = home.resolve("examples/grpo-sync.yaml").toString();
    Path lockFile = Files.createDirectories(runs.resolve("one-id")).resolve(".driver.lock");
    try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock held = ch.lock()) {
      ch.write(ByteBuffer.wrap("4242".getBytes(StandardCharsets.UTF_8)));
      RavelCommand.Result second = RavelCommand.run(SharedRayHead.env(), 120, "run", config, "grpo.steps=3",
          "telemetry.run_id=one-id", "telemetry.runs_dir=" + runs);
      assertThat(second.exitCode()).as("stderr: %s", second.stderr()).isEqualTo(2);
      assertThat(second.stderr()).contains("ravel: invalid configuration: telemetry.run_id: run 'one-id' is running:"
          + " its driver (pid 4242) holds " + lockFile);
      assertThat(second.stdout()).doesNotContain("Ray head started");
      assertThat(held.isValid()).isTrue();
    }

    // one generation worker: the claim is about the run's records and its lock, not its workers
    RavelCommand.Result run = RavelCommand.run(SharedRayHead.env(), 600, "run", config, "grpo.steps=3",
        "grpo.prompts_per_step=8", "generation.workers=1", "telemetry.run_id=one-id", "telemetry.runs_dir=" + runs);
    assertThat(run.exitCode()).as("stdout:%n%s%nstderr:%n%s", run.stdout(), run.stderr()).isZero();
    List<String> lines = Files.readAllLines(runs.resolve("one-id/steps.jsonl"));
    assertThat(lines).hasSize(3);
    assertThat(lockFile).doesNotExist();

    RavelCommand.Result later = RavelCommand.run(SharedRayHead.env(), 120, "run", config,
        "telemetry.run_id=one-id", "telemetry.runs_dir=" + runs);
    assertThat(later.exitCode()).isEqualTo(2);
    assertThat(later.stderr()).contains("telemetry.run_id: run 'one-id' already has records in")
        .contains("--resume one-id");
    assertThat(Files.readAllLines(runs.resolve("one-id/steps.jsonl"))).hasSize(3);
  }
}
