package dev.ravel.it.python;

import dev.ravel.driver.session.DriverSession;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.python.PythonModel;
import dev.ravel.workers.python.PythonWorkers;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** A small Python generation worker for the environment tests, and what its process sees. */
public final class PythonWorkerProcess {
  private PythonWorkerProcess() {}

  public static final PythonModel MODEL = new PythonModel("gpt2", 14, 1, 16, 2, 12);

  public static RavelActorHandle<GenerationWorker> start(DriverSession session) {
    return session.pythonActor(PythonWorkers.GENERATION_WORKER,
        PythonWorkers.generationSpec(MODEL, 7, 13, "ravel-tiny", "transformers", 64, "cpu"), GenerationWorker.class)
        .maxConcurrency(4).remote();
  }

  /** {@code n} requests for "1+2=" with seeds 0..n-1. */
  public static List<GenerationRequest> requests(int n) {
    List<GenerationRequest> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(GenerationRequest.of("env-" + i, new int[] {1, 10, 2, 12},
          SamplingParams.builder().maxTokens(3).temperature(1.0).topP(1.0).seed(i).build(), null));
    }
    return out;
  }

  public static List<GenerationResult> generate(RavelActorHandle<GenerationWorker> worker, int n) {
    return worker.call(GenerationWorker::generate, requests(n)).get();
  }

  /** The pid of the (one) process of {@code role} that wrote a span file in {@code runDir}. */
  public static long pid(Path runDir, String role) {
    try (Stream<Path> files = Files.list(runDir)) {
      List<Long> pids = files.map(p -> p.getFileName().toString())
          .filter(f -> f.startsWith("traces-" + role + "-") && f.endsWith(".jsonl"))
          .map(f -> Long.parseLong(f.substring(("traces-" + role + "-").length(), f.length() - ".jsonl".length())))
          .toList();
      if (pids.size() != 1) {
        throw new IllegalStateException("expected one " + role + " span file in " + runDir + ", found " + pids);
      }
      return pids.get(0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The environment a running process started with ({@code /proc/<pid>/environ}). */
  public static Map<String, String> environment(long pid) {
    try {
      String raw = new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "environ")), StandardCharsets.UTF_8);
      Map<String, String> env = new HashMap<>();
      for (String kv : raw.split("\0")) {
        int eq = kv.indexOf('=');
        if (eq > 0) {
          env.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
      }
      return env;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the environment of process " + pid, e);
    }
  }
}
