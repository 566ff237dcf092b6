package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.config.ConfigException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class RunLockTest {
  @TempDir
  Path tmp;

  @Test
  void claim_aFolderWithAnotherRunsRecords_isRefusedUnlessResumed() throws IOException {
    Path run = Files.createDirectories(tmp.resolve("r-1"));
    Files.writeString(run.resolve("steps.jsonl"), "{}\n");

    assertThatThrownBy(() -> RunLock.claim(run, "r-1", false)).isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("telemetry.run_id: run 'r-1' already has records in " + run + " (steps.jsonl)")
        .hasMessageContaining("--resume r-1");
    try (RunLock lock = RunLock.claim(run, "r-1", true)) {
      assertThat(run.resolve(RunLock.FILE)).hasContent(Long.toString(ProcessHandle.current().pid()));
    }
    assertThat(run.resolve(RunLock.FILE)).doesNotExist();
  }

  @Test
  void claim_whileAnotherDriverHoldsTheFolder_namesItsPid() {
    Path run = tmp.resolve("r-2");
    try (RunLock first = RunLock.claim(run, "r-2", false)) {
      assertThatThrownBy(() -> RunLock.claim(run, "r-2", false)).isInstanceOf(ConfigException.class)
          .hasMessage("telemetry.run_id: run 'r-2' is running: its driver (pid " + ProcessHandle.current().pid()
              + ") holds " + run.resolve(RunLock.FILE));
    }
    try (RunLock again = RunLock.claim(run, "r-2", false)) { // released: a folder without records is free
      assertThat(run.resolve(RunLock.FILE)).exists();
    }
  }
}
