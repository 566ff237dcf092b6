package dev.ravel.it.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.it.support.GrpoRuns;
import dev.ravel.it.support.RunMetrics;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.traces.SpanRecord;
import dev.ravel.telemetry.traces.TraceQuality;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GRPO with generation over HTTP on a real Ray head: {@code generation.backend=openai generation.launch=ravel}
 * with 2 workers, so 2 {@code ravel serve} processes. The sync run learns as the embedded one does (the same
 * margin as GrpoLearningIT: the server's engine is the same engine, reached over HTTP; 0.3 is over 5 standard
 * errors of the difference of two 5-step means; this seeded run's difference is about 0.56 by step 30, where its
 * curve has flattened, and stays so at step 40), and in both modes every
 * server's {@code llm_request} span is a child of a worker's call across the HTTP hop. One learning run: the
 * async run checks what async changes on this path (chunked calls, spans, every trajectory back) in a few
 * steps; that async training learns is GrpoPythonIT's claim.
 */
final class GrpoOpenAiIT {
  static final int STEPS = 30;
  static final int ASYNC_STEPS = 5;
  static final int WORKERS = 2;

  @TempDir
  static Path runs;

  private static GrpoRuns.Finished run(String id, String mode, int steps) {
    return GrpoRuns.run(runs, id, "run.mode=" + mode, "run.seed=7", "grpo.steps=" + steps,
        "grpo.prompts_per_step=32", "grpo.group_size=8", "generation.workers=" + WORKERS,
        "generation.backend=openai", "generation.launch=ravel", "telemetry.preset=per_step",
        "telemetry.engine_tracing=true", "telemetry.engine_sample_ratio=0.05");
  }

  @Test
  void sync_learnsAndServerSpansAreChildrenOfTheWorkersCalls() throws Exception {
    GrpoRuns.Finished run = run("it-openai-sync", "sync", STEPS);

    assertLearned(run.steps());
    assertServerSpansNestUnderWorkers(run);
    // every request of every step reached a server and came back
    assertThat(run.steps()).allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(256));
    assertRefitStages(run);
  }

  /**
   * Every refit over vLLM's native protocol: the driver puts the weights in the object store, then each worker
   * writes them where its server reads them, pauses, loads and resumes it, in that order, under its
   * {@code rl.worker.update_weights} inside the step's {@code rl.grpo.refit}; the bytes it wrote are the weights
   * put (plus the file's header) and the bytes loaded are those of its one server.
   */
  private static void assertRefitStages(GrpoRuns.Finished run) {
    java.util.Map<String, SpanRecord> byId = run.traces().byId();
    List<SpanRecord> updates = run.traces().named("rl.worker.update_weights");
    assertThat(updates).hasSizeGreaterThanOrEqualTo((STEPS - 1) * WORKERS); // each step after the first
    int inSteps = 0;
    for (SpanRecord u : updates) {
      List<SpanRecord> stages = run.traces().spans().stream().filter(s -> u.spanId().equals(s.parentSpanId()))
          .filter(s -> s.name().startsWith("rl.refit.")).sorted(java.util.Comparator.comparingLong(SpanRecord::startNanos))
          .toList();
      assertThat(stages.stream().map(SpanRecord::name)).containsExactly("rl.refit.fetch", "rl.refit.transfer",
          "rl.refit.pause", "rl.refit.load", "rl.refit.resume");
      long fetched = (Long) stages.get(0).attributes().get("rl.refit.bytes");
      long written = (Long) stages.get(1).attributes().get("rl.refit.bytes");
      assertThat(written).isGreaterThan(fetched); // the floats and the file's header
      assertThat(stages.get(3).attributes()).containsEntry("rl.refit.bytes", written);
      SpanRecord refit = byId.get(u.parentSpanId());
      if (refit != null && refit.name().equals("rl.grpo.refit")) {
        inSteps++;
        assertThat(run.traces().spans().stream().filter(s -> refit.spanId().equals(s.parentSpanId()))
            .filter(s -> s.name().equals("rl.refit.put")).map(s -> s.attributes().get("rl.refit.bytes")))
            .containsExactly(fetched);
      }
    }
    assertThat(inSteps).isEqualTo((STEPS - 1) * WORKERS);
  }

  @Test
  void async_serverSpansAreChildrenOfTheWorkersCallsAndEveryTrajectoryComesBack() throws Exception {
    GrpoRuns.Finished run = run("it-openai-async", "async", ASYNC_STEPS);

    assertThat(run.steps()).hasSize(ASYNC_STEPS)
        .allSatisfy(m -> assertThat(m.trajectories()).isEqualTo(256));
    assertServerSpansNestUnderWorkers(run);
    assertSpanTotalsEqualTheFolder(run);
  }

  /**
   * The run's account covers every process that wrote spans, the launched servers too (each wrote its counts
   * as it stopped, and its worker added them to its own): every span that ended is in the folder.
   */
  private static void assertSpanTotalsEqualTheFolder(GrpoRuns.Finished run) {
    ExportStats totals = run.session().spanTotals();
    long inFolder = run.traces().spans().size();
    long fromServers = run.traces().spans().stream().filter(s -> "inference_server".equals(s.role())).count();
    assertThat(fromServers).as("the servers' own spans").isPositive();
    assertThat(run.session().unreportedActors()).isEmpty();
    assertThat(totals.addsUp()).isTrue();
    assertThat(totals.ended()).as("spans ended, over the driver, the workers and their servers").isEqualTo(inFolder);
    assertThat(totals.exporters().get("file").exported()).isEqualTo(inFolder);
  }

  @Test
  void metrics_preemptionDeltasScrapedEachStepSumToTheServersOwnCount() throws Exception {
    GrpoRuns.Finished run = GrpoRuns.run(runs, "it-openai-preempt", "run.mode=sync", "grpo.steps=3",
        "grpo.prompts_per_step=8", "grpo.group_size=4", "grpo.max_new_tokens=8", "generation.workers=" + WORKERS,
        "generation.backend=openai", "generation.launch=ravel", "generation.kv_token_budget=24",
        "telemetry.engine_tracing=false");
    Path dir = run.config().telemetry().runDir();

    long servers = RunMetrics.counter(dir, "inference_server", "rl.engine.preemptions");
    long scraped = RunMetrics.counter(dir, "generation_worker", "rl.engine.preemptions");

    assertThat(servers).as("the servers' own preemption count").isPositive();
    assertThat(scraped).as("the workers' per-step deltas scraped from /metrics, summed").isEqualTo(servers);
  }

  private static void assertLearned(List<StepRecord> steps) {
    assertThat(steps).hasSize(STEPS);
    double first = steps.subList(0, 5).stream().mapToDouble(StepRecord::rewardMean).average().orElseThrow();
    double last = steps.subList(STEPS - 5, STEPS).stream().mapToDouble(StepRecord::rewardMean).average()
        .orElseThrow();
    System.out.printf("reward over HTTP: first 5 steps %.3f, last 5 steps %.3f%n", first, last);
    assertThat(last - first).isGreaterThan(0.3);
  }

  private static void assertServerSpansNestUnderWorkers(GrpoRuns.Finished run) throws Exception {
    TraceQuality quality = TraceQuality.of(run.traces().spans());
    assertThat(run.traces().problems()).isEmpty();
    assertThat(quality.generationCoverage()).hasValue(1.0);
    assertThat(quality.disconnected()).isEmpty();
    assertThat(quality.connectedness()).hasValue(1.0);

    Set<String> workerCalls = run.traces().named("rl.worker.generate").stream().map(SpanRecord::spanId)
        .collect(Collectors.toSet());
    workerCalls.addAll(run.traces().named("rl.worker.generate_async").stream().map(SpanRecord::spanId).toList());
    List<SpanRecord> llm = run.traces().named("llm_request");
    assertThat(llm).isNotEmpty().allSatisfy(s -> {
      assertThat(workerCalls).contains(s.parentSpanId());
      assertThat(s.role()).isEqualTo("inference_server");
      assertThat(s.kind()).isEqualTo(2);
      assertThat(s.attributes()).containsKeys("gen_ai.request.id", "rl.weight_version");
    });
    // each worker's server is a process of its own, and none outlives the run
    Set<Long> serverPids = llm.stream().map(s -> (Long) s.resourceAttribute(RavelAttributes.PROCESS_PID))
        .collect(Collectors.toSet());
    assertThat(serverPids).hasSize(WORKERS);
    for (Long pid : serverPids) {
      assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).as("server pid " + pid).isFalse();
    }
    try (Stream<Path> logs = Files.list(run.config().telemetry().runDir())) {
      assertThat(logs.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("inference-server-") && n.endsWith(".log")))
          .hasSize(WORKERS);
    }
  }
}
