package dev.ravel.driver.cli;

import dev.ravel.telemetry.runs.RunRecord;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.view.RunDiff;
import dev.ravel.telemetry.view.RunView;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code ravel diff A B}: two runs side by side, phase by phase, and the configuration keys that differ. */
@Command(name = "diff", mixinStandardHelpOptions = true,
    description = "Compare two runs: per phase of their steps, the median time of each and the ratio B/A, the median"
        + " step time, and the configuration keys whose values differ.")
final class DiffCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "A", description = "The first run (see ravel runs).")
  String runA;

  @Parameters(index = "1", paramLabel = "B", description = "The run compared with it.")
  String runB;

  @Option(names = "--runs-dir", description = "Folder of run folders (default: RAVEL_TELEMETRY_RUNS_DIR, else runs).")
  Path runsDir;

  @picocli.CommandLine.ParentCommand
  RavelCli cli;

  @Override
  public Integer call() {
    runsDir = RunsFolder.resolve(runsDir, RunsFolder.env(cli));
    for (String id : new String[] {runA, runB}) {
      if (!Files.isDirectory(runsDir.resolve(id))) {
        System.err.println("ravel: no run '" + id + "' under " + runsDir.toAbsolutePath() + " (ravel runs lists them)");
        return 1;
      }
    }
    RunTraces a = RunTraces.readDir(runsDir.resolve(runA));
    RunTraces b = RunTraces.readDir(runsDir.resolve(runB));
    a.problems().forEach(p -> System.err.println("ravel: " + runA + ": " + p));
    b.problems().forEach(p -> System.err.println("ravel: " + runB + ": " + p));
    RunDiff diff = RunDiff.of(runA, RunView.of(a.spans()), config(runsDir.resolve(runA)), runB, RunView.of(b.spans()),
        config(runsDir.resolve(runB)));
    System.out.print(diff.render());
    return 0;
  }

  /** The run's resolved configuration from its run.json; null when it has none (or it cannot be read). */
  private static Map<String, Object> config(Path dir) {
    try {
      return RunRecord.read(dir).map(RunRecord::config).orElse(null);
    } catch (IllegalArgumentException | java.io.UncheckedIOException e) {
      System.err.println("ravel: " + dir.getFileName() + ": " + RunRecord.FILE + " unreadable: " + e.getMessage());
      return null;
    }
  }
}
