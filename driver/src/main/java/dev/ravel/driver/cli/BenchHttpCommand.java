package dev.ravel.driver.cli;

import dev.ravel.workers.engine.EmbeddedEngine;
import dev.ravel.workers.engine.EngineConfig;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.generation.StepBatch;
import dev.ravel.workers.generation.openai.OpenAiBackend;
import dev.ravel.workers.generation.openai.ServerBackendSpec;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.model.TinyLm;
import dev.ravel.workers.serve.InferenceServer;
import dev.ravel.workers.task.ArithmeticTask;
import io.opentelemetry.api.OpenTelemetry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ravel bench-http}: generation throughput of the HTTP backend (an {@link OpenAiBackend} client of a
 * {@code ravel serve} server on loopback) against the embedded engine, on the same requests and the same
 * weights, in one JVM, interleaved round by round after one unrecorded warm-up round each. Both yield the
 * same tokens (sampling depends only on the request), so tokens/s compares like with like. Reports each
 * round and the ratio of the medians (HTTP / embedded).
 */
@Command(name = "bench-http", mixinStandardHelpOptions = true,
    description = "Benchmark generation over HTTP (ravel serve + the openai backend) against the embedded engine.")
final class BenchHttpCommand implements Callable<Integer> {
  @Option(names = "--prompts", defaultValue = "64", description = "Prompts per batch (default ${DEFAULT-VALUE}).")
  int prompts;

  @Option(names = "--group-size", defaultValue = "8", description = "Completions per prompt (default ${DEFAULT-VALUE}).")
  int groupSize;

  @Option(names = "--max-tokens", defaultValue = "32", description = "New tokens per completion at most (default ${DEFAULT-VALUE}).")
  int maxTokens;

  @Option(names = "--rounds", defaultValue = "5", description = "Recorded rounds (default ${DEFAULT-VALUE}).")
  int rounds;

  @Option(names = "--hidden-dim", defaultValue = "64",
      description = "The model's hidden units (64: the demo's tiny model; larger: generation costs more per token,"
          + " as on a real cluster) (default ${DEFAULT-VALUE}).")
  int hiddenDim;

  @Option(names = "--embed-dim", defaultValue = "16", description = "The model's embedding size (default ${DEFAULT-VALUE}).")
  int embedDim;

  @Override
  public Integer call() throws Exception {
    measure();
    return 0;
  }

  /**
   * Runs the rounds, prints them and returns the report: tokens/s of each side per round and the paired ratio
   * HTTP / embedded ({@code ratios.http_over_embedded}).
   */
  java.util.Map<String, Object> measure() throws Exception {
    if (prompts < 1 || groupSize < 1 || maxTokens < 1 || rounds < 1) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "--prompts, --group-size, --max-tokens and --rounds must be at least 1");
    }
    CharTokenizer tokenizer = CharTokenizer.arithmetic();
    ModelSpec model = ModelSpec.tiny(tokenizer.vocabSize()).toBuilder().hiddenDim(hiddenDim).embedDim(embedDim).build();
    ModelWeights weights = ModelWeights.init(model, 7);
    EngineConfig config = EngineConfig.builder().kvTokenBudget(1 << 16).maxRunningRequests(256)
        .modelName("ravel-tiny").eosToken(tokenizer.eos()).build();
    Path logs = Files.createTempDirectory("ravel-bench-http-");
    try (EmbeddedEngine embedded = new EmbeddedEngine(config, TinyLm.of(weights), OpenTelemetry.noop());
         InferenceServer server = InferenceServer.builder().engineConfig(config).weights(weights)
             .tokenizer(tokenizer).modelName("ravel-tiny").openTelemetry(OpenTelemetry.noop())
             .httpThreads(prompts * groupSize + 8).build()) {
      int port = server.start("127.0.0.1", 0);
      ServerBackendSpec spec = ServerBackendSpec.builder().servers(List.of("http://127.0.0.1:" + port))
          .maxInFlight(prompts * groupSize).refit(false).build();
      try (OpenAiBackend http = OpenAiBackend.start(spec, "ravel-tiny", weights, config.kvTokenBudget(),
          config.maxRunningRequests(), OpenTelemetry.noop(), logs)) {
        SamplingParams sampling = SamplingParams.builder().maxTokens(maxTokens).temperature(1.0).build();
        double[] embeddedTps = new double[rounds];
        double[] httpTps = new double[rounds];
        System.out.printf("%d requests a batch (%d prompts x %d), at most %d new tokens each, model %s%n",
            prompts * groupSize, prompts, groupSize, maxTokens, model);
        for (int r = -1; r < rounds; r++) {
          List<GenerationRequest> batch = StepBatch.plan(ArithmeticTask.standard(), tokenizer, prompts, groupSize,
              sampling, 7, r + 1).requests();
          boolean httpFirst = r % 2 != 0;
          double e = 0;
          double h = 0;
          for (int k = 0; k < 2; k++) {
            if ((k == 0) == httpFirst) {
              h = tokensPerSecond(() -> http.generate(batch));
            } else {
              e = tokensPerSecond(() -> embedded.generate(batch));
            }
          }
          if (r < 0) {
            System.out.println("warm-up round done");
            continue;
          }
          embeddedTps[r] = e;
          httpTps[r] = h;
          System.out.printf("round %d: embedded %,.0f tokens/s, http %,.0f tokens/s, ratio %.3f%n", r + 1, e, h, h / e);
        }
        double ratio = median(httpTps) / median(embeddedTps);
        System.out.printf("median: embedded %,.0f tokens/s, http %,.0f tokens/s; http/embedded = %.3f%n",
            median(embeddedTps), median(httpTps), ratio);
        java.util.Map<String, Object> root = new java.util.LinkedHashMap<>();
        root.put("embedded_tokens_per_s", Arrays.stream(embeddedTps).boxed().toList());
        root.put("http_tokens_per_s", Arrays.stream(httpTps).boxed().toList());
        root.put("ratios", java.util.Map.of("http_over_embedded", BenchStats.ratio(
            Arrays.stream(httpTps).boxed().toList(), Arrays.stream(embeddedTps).boxed().toList()).json()));
        root.put("model", model.toString());
        root.put("rounds", rounds);
        return root;
      }
    }
  }

  /** Tokens a second of one batch's generation ({@code bench-http}, {@code bench-calls}). */
  static double tokensPerSecond(java.util.function.Supplier<List<GenerationResult>> generate) {
    long start = System.nanoTime();
    List<GenerationResult> results = generate.get();
    double seconds = (System.nanoTime() - start) / 1e9;
    long tokens = 0;
    for (GenerationResult r : results) {
      tokens += r.requireSucceeded().completionTokens().length;
    }
    return tokens / seconds;
  }

  private static double median(double[] values) {
    double[] v = values.clone();
    Arrays.sort(v);
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }
}
