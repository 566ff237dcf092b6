package dev.ravel.driver.cli;

import dev.ravel.driver.demo.RelayDemo;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.config.TelemetryConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ravel demo}: two actors on Ray, traced calls, one trace per run. */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = "Start (or join RAY_ADDRESS) a Ray cluster, create two actors, the first calling the second,"
        + " and make traced calls; print the run id and where its traces are.")
final class DemoCommand implements Callable<Integer> {
  @Option(names = "--calls", defaultValue = "3", description = "Calls to make (default ${DEFAULT-VALUE}).")
  int calls;

  @Option(names = "--run-id", description = "Run id (default: generated).")
  String runId;

  @Option(names = "--runs-dir", defaultValue = "runs", description = "Folder of run folders (default ${DEFAULT-VALUE}).")
  Path runsDir;

  @Option(names = "--exporter", description = "file, otlp, both or none (default file).")
  String exporter;

  @Option(names = "--engine-tracing", description = "Let engines in the workers trace (unmasks OTEL_*).")
  Boolean engineTracing;

  @Option(names = "--address", description = "Ray address (default: RAY_ADDRESS, else a local head).")
  String address;

  @Override
  public Integer call() {
    Map<String, Object> section = new LinkedHashMap<>();
    section.put("runs_dir", runsDir.toString());
    if (runId != null) {
      section.put("run_id", runId);
    }
    if (exporter != null) {
      section.put("exporter", exporter);
    }
    if (engineTracing != null) {
      section.put("engine_tracing", engineTracing);
    }
    TelemetryConfig config = TelemetryConfig.fromMap(section, System.getenv());
    DriverSession.Builder b = DriverSession.builder(config);
    if (address != null) {
      b.address(address);
    }
    java.time.Instant started = java.time.Instant.now();
    try (DriverSession session = b.start()) {
      RelayDemo.Result r = new RelayDemo(session).run(calls);
      new dev.ravel.telemetry.runs.RunRecord(config.runId(), "demo", dev.ravel.telemetry.runs.RunRecord.Status.SUCCEEDED,
          started, java.time.Instant.now(), 0, Map.of("calls", calls), java.util.List.of(),
          Map.of("trace_id", r.traceId())).write(config.runDir());
      r.answers().forEach(a -> System.out.println("  " + a));
      System.out.println("run id: " + config.runId() + "  trace: " + r.traceId());
      if (config.exporter().writesFiles()) {
        System.out.println("traces: " + config.runDir());
      }
    }
    return 0;
  }
}
