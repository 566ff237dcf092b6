package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.runs.StepRecord;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class RunsFolderTest {
  @TempDir
  Path tmp;

  @Test
  void resolve_optionThenVariableThenDefault() {
    assertThat(RunsFolder.resolve(Path.of("given"), Map.of("RAVEL_TELEMETRY_RUNS_DIR", "env"))).isEqualTo(Path.of("given"));
    assertThat(RunsFolder.resolve(null, Map.of("RAVEL_TELEMETRY_RUNS_DIR", "env"))).isEqualTo(Path.of("env"));
    assertThat(RunsFolder.resolve(null, Map.of())).isEqualTo(Path.of("runs"));
  }

  @Test
  void reportAndExport_withOnlyTheVariableSet_lookWhereRunWroteTheRun() throws IOException {
    Path runs = tmp.resolve("elsewhere");
    Path run = Files.createDirectories(runs.resolve("r-env"));
    Files.writeString(run.resolve("steps.jsonl"), new StepRecord(1, "sync", 0.5, 0.1, 0.01, 0.02, 0.0, 10, 100.0, 0.1,
        Map.of("generation", 0.05), 1, 8, 0, 4, "t").toJsonLine() + "\n");
    Map<String, String> env = Map.of("RAVEL_TELEMETRY_RUNS_DIR", runs.toString());

    assertThat(RavelCli.execute(env, "report", "r-env")).isZero();
    assertThat(run.resolve("report.html")).isRegularFile();
    // export reads the same folder: the run is found (it has no checkpoint, which is what it says)
    assertThat(RavelCli.execute(env, "export", "r-env", tmp.resolve("out").toString())).isEqualTo(2);
    assertThat(RavelCli.execute(Map.of(), "report", "r-env", "--runs-dir", runs.toString())).isZero();
  }
}
