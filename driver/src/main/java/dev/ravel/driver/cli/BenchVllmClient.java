package dev.ravel.driver.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.generation.WeightsFileRef;
import dev.ravel.workers.generation.openai.OpenAiBackend;
import dev.ravel.workers.generation.openai.ServerBackendSpec;
import io.opentelemetry.api.OpenTelemetry;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Java side of {@code python -m ravel_checks.bench_vllm} (the suite's {@code vllm} part): Ravel's own HTTP client
 * of vLLM, {@link OpenAiBackend} as a run's generation worker has it ({@code generation.weight_sync: native}, the
 * run's defaults), driven one command at a time over standard input, so that the Python benchmark can pair its rounds
 * with the official {@code openai} client's on the same server. Each input line is one JSON command; each answer is
 * one line {@value #ANSWER} followed by JSON (anything else the process prints is not an answer):
 *
 * <ul>
 *   <li>{@code {"op": "generate", "url", "model", "prompts": [[ids]], "n", "max_tokens", "seed", "temperature",
 *       "top_p", "ignore_eos", "id"}}: prompt i as the GRPO group {@code <id>-p<i>-0 .. -(n-1)} seeded
 *       {@code seed + i * n + k}, which the backend sends as one request of {@code n} choices seeded
 *       {@code seed + i * n} (as the Python side sends it); answers {@code {"tokens", "seconds", "errors"}}, the
 *       seconds those of {@link OpenAiBackend#generate(List)} alone;</li>
 *   <li>{@code {"op": "refit", "url", "model", "path", "sha256", "bytes", "version"}}: the backend's
 *       {@link OpenAiBackend#updateWeights(WeightsFileRef)} with a trainer's {@code publish_file} answer (pause, start,
 *       update, finish, resume); answers {@code {"seconds"}};</li>
 *   <li>{@code {"op": "quit"}}: closes the backends and exits.</li>
 * </ul>
 *
 * One backend per server URL, started at its first command (which calls the server's
 * {@code init_weight_transfer_engine}, as a run's worker does).
 */
final class BenchVllmClient {
  /** What starts an answer line. */
  static final String ANSWER = "bench-vllm-client: ";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Map<String, OpenAiBackend> backends = new LinkedHashMap<>();
  private final Path logs;

  private BenchVllmClient(Path logs) {
    this.logs = logs;
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
        StandardCharsets.UTF_8);
    // the backends' own output (logging) goes to standard error: standard output carries the answers only
    System.setOut(System.err);
    BenchVllmClient client = new BenchVllmClient(Files.createTempDirectory("ravel-bench-vllm-client-"));
    try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isBlank()) {
          continue;
        }
        JsonNode cmd = JSON.readTree(line);
        String op = cmd.path("op").asText();
        Map<String, Object> answer;
        try {
          answer = switch (op) {
            case "generate" -> client.generate(cmd);
            case "refit" -> client.refit(cmd);
            case "quit" -> null;
            default -> throw new IllegalArgumentException("unknown op '" + op + "' (generate, refit, quit)");
          };
        } catch (RuntimeException e) {
          answer = Map.of("error", String.valueOf(e));
        }
        if (answer == null) {
          break;
        }
        out.println(ANSWER + JSON.writeValueAsString(answer));
      }
    } finally {
      client.backends.values().forEach(OpenAiBackend::close);
    }
  }

  private OpenAiBackend backend(JsonNode cmd) {
    String url = cmd.path("url").asText();
    String model = cmd.path("model").asText();
    return backends.computeIfAbsent(url + " " + model, k -> {
      // a run's defaults: native weight sync, 64 requests in flight, the request timeout of generation.*
      ServerBackendSpec spec = ServerBackendSpec.builder().servers(List.of(url)).build();
      return OpenAiBackend.start(spec, model, null, 1, 256, OpenTelemetry.noop(), logs);
    });
  }

  private Map<String, Object> generate(JsonNode cmd) {
    OpenAiBackend b = backend(cmd);
    int n = cmd.path("n").asInt();
    long seed = cmd.path("seed").asLong();
    SamplingParams base = SamplingParams.builder().maxTokens(cmd.path("max_tokens").asInt())
        .temperature(cmd.path("temperature").asDouble()).topP(cmd.path("top_p").asDouble())
        .ignoreEos(cmd.path("ignore_eos").asBoolean()).build();
    List<GenerationRequest> batch = new ArrayList<>();
    JsonNode prompts = cmd.path("prompts");
    for (int i = 0; i < prompts.size(); i++) {
      int[] ids = new int[prompts.get(i).size()];
      for (int t = 0; t < ids.length; t++) {
        ids[t] = prompts.get(i).get(t).asInt();
      }
      for (int k = 0; k < n; k++) {
        batch.add(GenerationRequest.of(cmd.path("id").asText() + "-p" + i + "-" + k, ids,
            base.withSeed(seed + (long) i * n + k), TraceCarrier.EMPTY));
      }
    }
    long t0 = System.nanoTime();
    List<GenerationResult> results = b.generate(batch);
    double seconds = (System.nanoTime() - t0) / 1e9;
    long tokens = 0;
    int errors = 0;
    String firstError = "";
    for (GenerationResult r : results) {
      if (r.succeeded()) {
        tokens += r.completionTokens().length;
      } else if (errors++ == 0) {
        firstError = String.valueOf(r.error());
      }
    }
    Map<String, Object> a = new LinkedHashMap<>();
    a.put("tokens", tokens);
    a.put("seconds", seconds);
    a.put("errors", errors);
    a.put("first_error", firstError);
    return a;
  }

  private Map<String, Object> refit(JsonNode cmd) {
    OpenAiBackend b = backend(cmd);
    WeightsFileRef ref = new WeightsFileRef(cmd.path("path").asText(), cmd.path("sha256").asText(),
        cmd.path("bytes").asLong(), cmd.path("version").asLong());
    long t0 = System.nanoTime();
    long version = b.updateWeights(ref);
    double seconds = (System.nanoTime() - t0) / 1e9;
    return Map.of("seconds", seconds, "version", version);
  }
}
