package dev.ravel.driver.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.driver.session.DriverSession;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.bench.Echo;
import dev.ravel.workers.bench.EchoActor;
import dev.ravel.workers.bench.PlainEcho;
import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.EngineConfig;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.generation.GenerationWorkerActor;
import dev.ravel.workers.generation.GenerationWorkerSpec;
import dev.ravel.workers.generation.StepBatch;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import dev.ravel.workers.task.ArithmeticTask;
import io.ray.api.ActorHandle;
import io.ray.api.Ray;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ravel bench-calls}: the cost of an actor call through {@link RavelActorHandle} (the caller's context
 * captured and carried, arguments and result in Ravel's codec, the call in an {@code rl.echo.echo} span on
 * the actor) against a plain Ray actor call of the same method, on the same head, in one driver. Each round
 * makes {@code --calls} sequential calls (call, then wait for the result) to each actor, the order
 * alternating between rounds, after an unrecorded warm-up of {@code --warmup-calls} calls each. The ratio is
 * paired round by round.
 */
@Command(name = "bench-calls", mixinStandardHelpOptions = true,
    description = "Benchmark an actor call through RavelActorHandle against a plain Ray actor call (same head).")
final class BenchCallsCommand implements Callable<Integer> {
  @Option(names = "--calls", defaultValue = "2000", description = "Sequential calls per actor and round (default ${DEFAULT-VALUE}).")
  int calls;

  @Option(names = "--warmup-calls", defaultValue = "10000",
      description = "Unrecorded calls per actor before the rounds (default ${DEFAULT-VALUE}): enough for the JIT"
          + " compiler to finish with both call paths on a loaded machine, so the rounds time the steady state.")
  int warmupCalls;

  @Option(names = "--rounds", defaultValue = "5", description = "Recorded rounds (default ${DEFAULT-VALUE}).")
  int rounds;

  @Option(names = "--payload-bytes", defaultValue = "64", description = "Bytes sent and returned per call (default ${DEFAULT-VALUE}).")
  int payloadBytes;

  @Option(names = "--generation-rounds", defaultValue = "5",
      description = "Rounds of the generation comparison: one GRPO step's requests through a generation worker actor"
          + " against the same engine in this process (0 leaves it out; default ${DEFAULT-VALUE}).")
  int generationRounds;

  @Option(names = "--runs-dir", defaultValue = "runs/bench", description = "Where the benchmark's spans go.")
  Path runsDir;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the result as JSON.")
  Path json;

  @Option(names = "--telemetry", defaultValue = "true", arity = "1",
      description = "Trace the Ravel calls (true, the default: as a run does) or not (false).")
  boolean telemetry;

  @Option(names = "--only", defaultValue = "both", paramLabel = "ravel|plain|both",
      description = "Time only the RavelActorHandle calls (ravel), only the plain Ray calls (plain), or both paired"
          + " (both, the default): one kind of call only, for a profile of one side.")
  String only;

  @Option(names = "--actor-jvm-option", paramLabel = "OPTION",
      description = "A JVM option of both echo actors' worker processes (repeatable), e.g."
          + " -XX:+PreserveFramePointer for a profile.")
  List<String> actorJvmOptions = new ArrayList<>();

  @Option(names = "--pause-s", defaultValue = "0",
      description = "After the warm-up, print the processes' ids and wait this many seconds before the recorded"
          + " rounds, and as long after them (to attach a profiler and read its symbols; default ${DEFAULT-VALUE}).")
  int pauseSeconds;

  @Option(names = "--fanout-actors", defaultValue = "0", paramLabel = "N",
      description = "Also measure the hop of a fan-out to N actors through Ravel against plain Ray's, Java and"
          + " Python actors (0, the default: not measured).")
  int fanoutActors;

  @Option(names = "--fanout-spin-ms", defaultValue = "20",
      description = "How long each fan-out call keeps its actor's CPU busy (default ${DEFAULT-VALUE}).")
  double fanoutSpinMs;

  @Option(names = "--fanout-calls", defaultValue = "30",
      description = "Fan-outs per side and round; a round's hop is their median (default ${DEFAULT-VALUE}).")
  int fanoutCalls;

  @Option(names = "--fanout-languages", defaultValue = "java,python", split = ",", paramLabel = "java|python",
      description = "The actors' languages (default ${DEFAULT-VALUE}).")
  List<String> fanoutLanguages = new ArrayList<>();

  @Option(names = "--fanout-request-chars", defaultValue = "4096",
      description = "Characters each fan-out call sends (default ${DEFAULT-VALUE}).")
  int fanoutRequestChars;

  @Option(names = "--fanout-result-chars", defaultValue = "24576",
      description = "Characters each fan-out call answers (default ${DEFAULT-VALUE}: a generate call's answer).")
  int fanoutResultChars;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    Map<String, Object> root = measure();
    if (json != null) {
      if (json.toAbsolutePath().getParent() != null) {
        Files.createDirectories(json.toAbsolutePath().getParent());
      }
      new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(json.toFile(), root);
      System.out.println("wrote " + json.toAbsolutePath());
    }
    return 0;
  }

  /** Runs the rounds, prints the result and returns the report ({@code --json} writes it). */
  Map<String, Object> measure() throws Exception {
    if (calls < 1 || rounds < 1 || payloadBytes < 0 || pauseSeconds < 0 || warmupCalls < 0) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--calls and --rounds must be at least 1, --payload-bytes, --warmup-calls and --pause-s at least 0");
    }
    if (!List.of("ravel", "plain", "both").contains(only)) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--only takes ravel, plain or both, not " + only);
    }
    BenchFanout fanout;
    try {
      fanout = fanoutActors > 0 ? new BenchFanout(fanoutActors, fanoutSpinMs, fanoutCalls, fanoutRequestChars,
          fanoutResultChars, fanoutLanguages) : null;
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }
    Map<String, Object> section = new LinkedHashMap<>();
    section.put("runs_dir", runsDir.toString());
    section.put("run_id", "bench-calls-" + System.currentTimeMillis() % 100000);
    section.put("preset", "per_step");
    section.put("enabled", telemetry);
    TelemetryConfig config = TelemetryConfig.fromMap(section, System.getenv());
    byte[] payload = new byte[payloadBytes];
    List<Double> ravel = new ArrayList<>();
    List<Double> plain = new ArrayList<>();
    // CPU time per call of the driver and of the actor's process, per round: {driver ns, actor ns}
    List<double[]> ravelCpu = new ArrayList<>();
    List<double[]> plainCpu = new ArrayList<>();
    BenchStats.Ratio generation;
    Map<String, Object> fanoutReport = null;
    try (DriverSession session = DriverSession.builder(config).start()) {
      RavelActorHandle<Echo> r = session.actor(EchoActor::new, Echo.class).jvmOptions(actorJvmOptions).remote();
      ActorHandle<PlainEcho> p = actorJvmOptions.isEmpty() ? Ray.actor(PlainEcho::new).remote()
          : Ray.actor(PlainEcho::new).setJvmOptions(actorJvmOptions).remote();
      long ravelPid = r.call(Echo::pid).get();
      long plainPid = p.task(PlainEcho::pid).remote().get();

      long self = ProcessHandle.current().pid();
      System.out.print("warm-up ... ");
      System.out.flush();
      ravelCalls(r, payload, warmupCalls);
      plainCalls(p, payload, warmupCalls);
      System.out.println("done");
      if (pauseSeconds > 0) {
        System.out.printf("pids: driver %d ravel-actor %d plain-actor %d; rounds start in %d s%n", self, ravelPid,
            plainPid, pauseSeconds);
        System.out.flush();
        Thread.sleep(pauseSeconds * 1000L);
      }
      for (int round = 0; round < rounds; round++) {
        double rv = Double.NaN;
        double pv = Double.NaN;
        for (int k = 0; k < 2; k++) {
          boolean ravelTurn = (round + k) % 2 == 0;
          if (!only.equals("both") && ravelTurn != only.equals("ravel")) {
            continue;
          }
          long cpu0 = cpuNanos(self);
          long actor0 = cpuNanos(ravelTurn ? ravelPid : plainPid);
          long start = System.nanoTime();
          double ns = ravelTurn ? ravelCalls(r, payload, calls) : plainCalls(p, payload, calls);
          if (pauseSeconds > 0) {
            // for a profile of the driver (perf record -k CLOCK_MONOTONIC): which calls ran when
            System.out.printf("phase %s %d %d%n", ravelTurn ? "ravel" : "plain", start, System.nanoTime());
          }
          double driverCpu = (double) (cpuNanos(self) - cpu0) / calls;
          double actorCpu = (double) (cpuNanos(ravelTurn ? ravelPid : plainPid) - actor0) / calls;
          (ravelTurn ? ravelCpu : plainCpu).add(new double[] {driverCpu, actorCpu});
          if (ravelTurn) {
            rv = ns;
          } else {
            pv = ns;
          }
        }
        if (!Double.isNaN(rv)) {
          ravel.add(rv);
        }
        if (!Double.isNaN(pv)) {
          plain.add(pv);
        }
        System.out.printf("round %d: RavelActorHandle %.1f us/call, plain Ray %.1f us/call, ratio %.3f%n",
            round + 1, rv / 1e3, pv / 1e3, rv / pv);
      }
      System.out.println("rounds done");
      System.out.flush();
      if (pauseSeconds > 0) {
        Thread.sleep(pauseSeconds * 1000L); // the profiler stops and reads the processes' symbols meanwhile
      }
      p.kill();
      generation = generationRounds > 0 ? generation(session) : null;
      if (fanout != null) {
        fanoutReport = fanout.measure(session, rounds);
      }
    }
    BenchStats.Ratio ratio = only.equals("both") ? BenchStats.ratio(ravel, plain) : null;
    if (ratio != null) {
      System.out.printf("%nRavelActorHandle / plain Ray call: %.3f%s (median %.1f vs %.1f us/call)%n", ratio.value(),
          ratio.intervalText(), BenchStats.median(ravel) / 1e3, BenchStats.median(plain) / 1e3);
    } else {
      System.out.printf("%n%s calls only (--only): median %.1f us/call%n", only,
          BenchStats.median(only.equals("ravel") ? ravel : plain) / 1e3);
    }
    System.out.printf("CPU per call (mean over rounds): Ravel driver %.1f us + actor %.1f us; plain driver %.1f us"
        + " + actor %.1f us%n", meanOf(ravelCpu, 0) / 1e3, meanOf(ravelCpu, 1) / 1e3, meanOf(plainCpu, 0) / 1e3,
        meanOf(plainCpu, 1) / 1e3);
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("variants", Map.of(
        "ravel", Map.of("ns_per_call", ravel, "median_ns", BenchStats.median(ravel),
            "driver_cpu_ns_per_call", meanOf(ravelCpu, 0), "actor_cpu_ns_per_call", meanOf(ravelCpu, 1)),
        "plain", Map.of("ns_per_call", plain, "median_ns", BenchStats.median(plain),
            "driver_cpu_ns_per_call", meanOf(plainCpu, 0), "actor_cpu_ns_per_call", meanOf(plainCpu, 1))));
    if (ratio != null) {
      root.put("ratios", Map.of("ravel_over_plain", ratio.json()));
    }
    if (generation != null) {
      root.put("generation", Map.of("actor_over_in_process_tokens_per_s", generation.json()));
    }
    if (fanoutReport != null) {
      root.put("fanout", fanoutReport);
    }
    root.put("calls", calls);
    root.put("warmup_calls", warmupCalls);
    root.put("rounds", rounds);
    root.put("payload_bytes", payloadBytes);
    return root;
  }

  /**
   * The generation phase's path (a {@code generate} call to a worker actor: the requests and results through
   * Ravel's codec and Ray, the worker's span, its engine) against the same engine on the same requests in this
   * process: 32 prompts x 8, 32 new tokens each (EOS ignored, so both do the same work), the bench workload's
   * model. Both produce the same tokens; tokens/s per round, the order alternating, after one warm-up round.
   */
  private BenchStats.Ratio generation(DriverSession session) {
    CharTokenizer tokenizer = CharTokenizer.arithmetic();
    ModelSpec model = ModelSpec.tiny(tokenizer.vocabSize()).toBuilder().hiddenDim(256).embedDim(32).build();
    ModelWeights weights = ModelWeights.init(model, 7);
    EngineConfig config = EngineConfig.builder().kvTokenBudget(16384).maxRunningRequests(256)
        .modelName("ravel-tiny").eosToken(tokenizer.eos()).build();
    SamplingParams sampling = SamplingParams.builder().maxTokens(32).temperature(1.0).ignoreEos(true).build();
    RavelActorHandle<GenerationWorker> worker = session.actor(GenerationWorkerActor::new,
        new GenerationWorkerSpec(config.kvTokenBudget(), config.maxRunningRequests(), "ravel-tiny", tokenizer.eos(),
            weights, null), GenerationWorker.class).maxConcurrency(4).remote();
    List<Double> actor = new ArrayList<>();
    List<Double> local = new ArrayList<>();
    try (EmbeddedEngine engine = new EmbeddedEngine(config, TinyLm.of(weights), io.opentelemetry.api.OpenTelemetry.noop())) {
      for (int r = -1; r < generationRounds; r++) {
        List<GenerationRequest> batch = StepBatch.plan(ArithmeticTask.standard(), tokenizer, 32, 8, sampling, 7, r + 1)
            .requests();
        double a = 0;
        double l = 0;
        for (int k = 0; k < 2; k++) {
          if ((k == 0) == (r % 2 == 0)) {
            a = BenchHttpCommand.tokensPerSecond(() -> worker.call(GenerationWorker::generate, batch).get());
          } else {
            l = BenchHttpCommand.tokensPerSecond(() -> engine.generate(batch));
          }
        }
        if (r < 0) {
          continue;
        }
        actor.add(a);
        local.add(l);
        System.out.printf("generation round %d: worker actor %,.0f tokens/s, engine in-process %,.0f tokens/s, ratio %.3f%n",
            r + 1, a, l, a / l);
      }
    }
    BenchStats.Ratio ratio = BenchStats.ratio(actor, local);
    System.out.printf("generation phase tokens/s / the engine alone in-process: %.3f%s%n", ratio.value(),
        ratio.intervalText());
    return ratio;
  }

  /** Mean nanoseconds per sequential call. */
  private static double ravelCalls(RavelActorHandle<Echo> echo, byte[] payload, int n) {
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      check(echo.call(Echo::echo, payload).get(), payload);
    }
    return (double) (System.nanoTime() - t0) / Math.max(1, n);
  }

  private static double plainCalls(ActorHandle<PlainEcho> echo, byte[] payload, int n) {
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      check(echo.task(PlainEcho::echo, payload).remote().get(), payload);
    }
    return (double) (System.nanoTime() - t0) / Math.max(1, n);
  }

  private static double meanOf(List<double[]> rows, int i) {
    return rows.stream().mapToDouble(x -> x[i]).average().orElse(Double.NaN);
  }

  /** User plus system CPU time of process {@code pid} in ns ({@link ProcessCpu#ownNanos}); -1 when it is gone. */
  static long cpuNanos(long pid) {
    return ProcessCpu.ownNanos(pid);
  }

  private static void check(byte[] got, byte[] sent) {
    if (got == null || got.length != sent.length) {
      throw new IllegalStateException("echo returned " + (got == null ? "null" : got.length + " bytes") + " for "
          + sent.length);
    }
  }
}
