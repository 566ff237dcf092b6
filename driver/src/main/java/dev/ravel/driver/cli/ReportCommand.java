package dev.ravel.driver.cli;

import dev.ravel.telemetry.view.RunReport;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code ravel report <run-id>}: the run's curves, step times and waterfalls as one HTML page. */
@Command(name = "report", mixinStandardHelpOptions = true,
    description = "Write one self-contained HTML page of a run: reward, KL and loss curves, step time by goodput "
        + "bucket, the engine's queue time and preemptions, and a row per step that opens its waterfall.")
final class ReportCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "RUN_ID", description = "The run (see ravel runs).")
  String runId;

  @Option(names = "--html", paramLabel = "FILE",
      description = "Where to write the page (default: runs/<run-id>/report.html).")
  Path html;

  @Option(names = "--runs-dir", description = "Folder of run folders (default: RAVEL_TELEMETRY_RUNS_DIR, else runs).")
  Path runsDir;

  @picocli.CommandLine.ParentCommand
  RavelCli cli;

  @Option(names = "--max-waterfalls", defaultValue = "" + RunReport.DEFAULT_MAX_WATERFALLS,
      description = "Embed the waterfalls of at most this many steps, the last ones (default ${DEFAULT-VALUE}).")
  int maxWaterfalls;

  @Override
  public Integer call() throws IOException {
    runsDir = RunsFolder.resolve(runsDir, RunsFolder.env(cli));
    if (maxWaterfalls < 0) {
      throw new dev.ravel.telemetry.config.ConfigException("--max-waterfalls", "must not be negative, got " + maxWaterfalls);
    }
    Path dir = runsDir.resolve(runId);
    if (!Files.isDirectory(dir)) {
      System.err.println("ravel: no run '" + runId + "' under " + runsDir.toAbsolutePath() + " (ravel runs lists them)");
      return 1;
    }
    RunReport report;
    try {
      report = RunReport.read(dir);
    } catch (IllegalArgumentException e) {
      System.err.println("ravel: " + e.getMessage());
      return 1;
    }
    report.problems().forEach(p -> System.err.println("ravel: " + p));
    Path out = html != null ? html : dir.resolve("report.html");
    if (out.toAbsolutePath().getParent() != null) {
      Files.createDirectories(out.toAbsolutePath().getParent());
    }
    Files.writeString(out, report.render(maxWaterfalls), StandardCharsets.US_ASCII);
    System.out.println("wrote " + out.toAbsolutePath() + " (" + (report.traceCount() > 0 ? "no steps, "
        + report.traceCount() + " traces" : report.stepCount() + " steps") + " of run " + report.runId() + ")");
    return 0;
  }
}
