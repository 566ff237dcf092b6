package dev.ravel.it.support;

import dev.ravel.driver.config.RunConfig;
import dev.ravel.driver.grpo.GrpoRun;
import dev.ravel.driver.grpo.StepListener;
import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.traces.RunTraces;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Runs a GRPO run on the shared Ray head ({@link SharedRayHead}) and reads its spans back from the JSONL files. */
public final class GrpoRuns {
  private GrpoRuns() {}

  /** What a finished run left behind. */
  public record Finished(RunConfig config, List<StepRecord> steps, RunTraces traces, DriverSession session) {}

  public static Finished run(Path runsDir, String runId, String... overrides) {
    List<String> o = new ArrayList<>(List.of(overrides));
    o.add("telemetry.run_id=" + runId);
    o.add("telemetry.runs_dir=" + runsDir);
    RunConfig config = RunConfig.load(null, o, TestEnv.clean());
    DriverSession session = DriverSession.builder(config.telemetry()).env(SharedRayHead.env())
        .workerJvmOptions(List.of("-Xmx256m", "-XX:+UseSerialGC")).start();
    List<StepRecord> steps;
    try {
      steps = new GrpoRun(session, config, StepListener.NONE).run();
    } finally {
      session.close();
    }
    return new Finished(config, steps, RunTraces.readDir(config.telemetry().runDir()), session);
  }
}
