package dev.ravel.driver.cli;

import dev.ravel.telemetry.view.RunOverlay;
import dev.ravel.telemetry.view.RunReport;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ravel report <run-id>}: the run's curves, step times and waterfalls as one HTML page;
 * {@code ravel report A B [C...]}: the runs' curves overlaid, with the configuration keys that differ.
 */
@Command(name = "report", mixinStandardHelpOptions = true,
    description = {"Write one self-contained HTML page of a run: reward, KL and loss curves, step time by goodput "
        + "bucket, the engine's queue time and preemptions, and a row per step that opens its waterfall.",
        "With several runs, one page overlays their curves (a series per run, legend by run id) and lists the "
        + "configuration keys whose values differ."})
final class ReportCommand implements Callable<Integer> {
  @Parameters(arity = "1..*", paramLabel = "RUN_ID", description = "The run, or up to "
      + RunOverlay.MAX_RUNS + " runs to overlay (see ravel runs).")
  java.util.List<String> runIds;

  @Option(names = "--html", paramLabel = "FILE",
      description = "Where to write the page (default: runs/<run-id>/report.html; for several runs "
          + "runs/report-<A>-vs-<B>....html).")
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
    if (runIds.size() > RunOverlay.MAX_RUNS) {
      System.err.println("ravel: at most " + RunOverlay.MAX_RUNS + " runs fit one report, got " + runIds.size());
      return 2;
    }
    java.util.List<RunReport> reports = new java.util.ArrayList<>();
    java.util.Set<Path> seen = new java.util.HashSet<>();
    for (String runId : runIds) {
      Path dir = runsDir.resolve(runId);
      if (!Files.isDirectory(dir)) {
        System.err.println("ravel: no run '" + runId + "' under " + runsDir.toAbsolutePath() + " (ravel runs lists them)");
        return 1;
      }
      if (!seen.add(dir.toAbsolutePath().normalize())) {
        System.err.println("ravel: run '" + runId + "' is given twice");
        return 2;
      }
      try {
        reports.add(RunReport.read(dir));
      } catch (IllegalArgumentException e) {
        System.err.println("ravel: " + e.getMessage());
        return 1;
      }
    }
    reports.forEach(r -> r.problems().forEach(p -> System.err.println("ravel: " + (reports.size() > 1
        ? r.runId() + ": " : "") + p)));
    if (reports.size() > 1) {
      RunOverlay overlay;
      try {
        overlay = RunOverlay.of(reports);
      } catch (IllegalArgumentException e) {
        System.err.println("ravel: " + e.getMessage());
        return 2;
      }
      Path out = html != null ? html : runsDir.resolve(overlayName(runIds));
      write(out, overlay.render());
      System.out.println("wrote " + out.toAbsolutePath() + " (" + reports.size() + " runs: "
          + String.join(", ", overlay.runIds()) + "; " + (overlay.configsKnown() ? overlay.differingKeys().size()
          + " config keys differ" : "configs not compared") + ")");
      return 0;
    }
    RunReport report = reports.get(0);
    Path out = html != null ? html : runsDir.resolve(runIds.get(0)).resolve("report.html");
    write(out, report.render(maxWaterfalls));
    System.out.println("wrote " + out.toAbsolutePath() + " (" + (report.traceCount() > 0 ? "no steps, "
        + report.traceCount() + " traces" : report.stepCount() + " steps") + " of run " + report.runId() + ")");
    return 0;
  }

  /**
   * {@code report-<A>-vs-<B>....html}, or, when that passes a file name's 255 bytes (long run ids), the first run's
   * id and a digest of them all.
   */
  static String overlayName(java.util.List<String> runIds) {
    String joined = "report-" + String.join("-vs-", runIds) + ".html";
    if (joined.getBytes(StandardCharsets.UTF_8).length <= 255) {
      return joined;
    }
    String first = runIds.get(0).length() > 120 ? runIds.get(0).substring(0, 120) : runIds.get(0);
    try {
      byte[] d = java.security.MessageDigest.getInstance("SHA-256")
          .digest(String.join("\n", runIds).getBytes(StandardCharsets.UTF_8));
      return "report-" + first + "-vs-" + (runIds.size() - 1) + "-more-" + java.util.HexFormat.of().formatHex(d, 0, 6)
          + ".html";
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("no SHA-256 in this JVM", e);
    }
  }

  private static void write(Path out, String page) throws IOException {
    if (out.toAbsolutePath().getParent() != null) {
      Files.createDirectories(out.toAbsolutePath().getParent());
    }
    Files.writeString(out, page, StandardCharsets.US_ASCII);
  }
}
