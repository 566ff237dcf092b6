package dev.ravel.workers.generation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.engine.EngineStats;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.ModelSpec;
import dev.ravel.workers.model.ModelWeights;
import dev.ravel.workers.task.Problem;
import io.ray.api.ObjectRef;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The worker's logic on an actor built outside Ray (its telemetry is off without
 * {@code RAVEL_TELEMETRY_RUN_ID}), serving {@code TinyLm}s over the arithmetic tokenizer.
 */
@Timeout(60)
final class GenerationWorkerActorTest {
  private static final CharTokenizer TOKENIZER = CharTokenizer.arithmetic();
  private static final int EOS = TOKENIZER.eos();
  private static final ModelSpec SPEC = ModelSpec.tiny(TOKENIZER.vocabSize());
  private static final List<Problem> PROBLEMS =
      List.of(new Problem("1+2=", "3"), new Problem("3+4=", "7"), new Problem("0+0=", "0"));
  private static final int MAX_TOKENS = 4;

  private final ExecutorService pool = Executors.newFixedThreadPool(8);

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  @Test
  void generate_returnsOneResultPerRequestInRequestOrder() {
    GenerationWorkerActor worker = worker(4096, 8, EOS, ModelWeights.init(SPEC, 1));
    List<GenerationRequest> requests = requests(4, 0);

    List<GenerationResult> results = worker.generate(requests);

    assertThat(results).extracting(GenerationResult::requestId)
        .containsExactlyElementsOf(requests.stream().map(GenerationRequest::requestId).toList());
    for (int i = 0; i < results.size(); i++) {
      GenerationResult r = results.get(i);
      int[] completion = r.completionTokens();
      assertThat(r.promptTokens()).containsExactly(requests.get(i).promptTokens());
      assertThat(completion.length).isBetween(1, MAX_TOKENS);
      assertThat(r.logprobs()).hasSize(completion.length);
      assertThat(r.finishReason())
          .isEqualTo(completion[completion.length - 1] == EOS ? FinishReason.STOP : FinishReason.LENGTH);
      assertThat(r.weightVersion()).isZero();
      assertThat(r.error()).isNull();
    }
  }

  @Test
  void generate_stopsOnTheSpecsEosToken() {
    ModelWeights alwaysEos = withEosBias(ModelWeights.init(SPEC, 1), 50f);
    GenerationWorkerActor eosIsThatToken = worker(4096, 8, EOS, alwaysEos);
    GenerationWorkerActor eosIsAnotherToken = worker(4096, 8, 0, alwaysEos);

    List<GenerationResult> stopped = eosIsThatToken.generate(requests(2, 0));
    List<GenerationResult> ranOn = eosIsAnotherToken.generate(requests(2, 0));

    for (GenerationResult r : stopped) {
      assertThat(r.completionTokens()).containsExactly(EOS);
      assertThat(r.finishReason()).isEqualTo(FinishReason.STOP);
    }
    for (GenerationResult r : ranOn) {
      assertThat(r.completionTokens()).hasSize(MAX_TOKENS).containsOnly(EOS);
      assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
    }
  }

  @Test
  void generate_promptBeyondTheSpecsKvBudgetIsAnErrorResultNotAFailedCall() {
    GenerationWorkerActor worker = worker(4, 8, EOS, ModelWeights.init(SPEC, 1));

    List<GenerationResult> results = worker.generate(requests(1, 0));

    assertThat(results).hasSize(PROBLEMS.size()).allSatisfy(r -> {
      assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
      assertThat(r.error()).contains("KV token budget of 4");
      assertThat(r.completionTokens()).isEmpty();
    });
  }

  @Test
  void constructor_eosTokenOutsideTheModelsVocabularyIsRejected() {
    assertThatThrownBy(() -> worker(4096, 8, TOKENIZER.vocabSize(), ModelWeights.init(SPEC, 1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("eosToken");
  }

  @Test
  void generateAsync_givesWhatTheBatchedCallGivesForTheSameRequest() {
    GenerationWorkerActor worker = worker(4096, 8, EOS, ModelWeights.init(SPEC, 1));
    List<GenerationRequest> requests = requests(3, 0);
    List<GenerationResult> batched = worker.generate(requests);

    for (int i = 0; i < requests.size(); i++) {
      GenerationResult one = worker.generateAsync(List.of(requests.get(i))).get(0);

      assertSameCompletion(one, batched.get(i));
    }
  }

  @Test
  void generateAsync_concurrentCallsEachGetTheirOwnResult() throws Exception {
    GenerationWorkerActor worker = worker(4096, 8, EOS, ModelWeights.init(SPEC, 1));
    List<GenerationRequest> requests = requests(8, 0);
    List<GenerationResult> expected = worker(4096, 8, EOS, ModelWeights.init(SPEC, 1)).generate(requests);

    List<CompletableFuture<GenerationResult>> calls = new ArrayList<>();
    for (GenerationRequest r : requests) {
      calls.add(CompletableFuture.supplyAsync(() -> worker.generateAsync(List.of(r)).get(0), pool));
    }

    for (int i = 0; i < requests.size(); i++) {
      assertSameCompletion(calls.get(i).get(30, TimeUnit.SECONDS), expected.get(i));
    }
    assertThat(worker.engineStats().requestsFinishedTotal()).isEqualTo(requests.size());
  }

  @Test
  void generateAsync_interruptedWhileWaitingFailsNamingTheRequestAndKeepsTheInterrupt() throws Exception {
    // one running request at a time: a long one (EOS never sampled; under a second of decoding, finished in
    // the background) holds the engine while the next waits
    GenerationWorkerActor worker = worker(12_000, 1, EOS, withEosBias(ModelWeights.init(SPEC, 1), -50f));
    GenerationRequest blocker = GenerationRequest.of("blocker", TOKENIZER.encode("1+2="),
        SamplingParams.builder().maxTokens(10_000).seed(1).build(), null);
    pool.submit(() -> worker.generateAsync(List.of(blocker)));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (worker.engineStats().running() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    assertThat(worker.engineStats().running()).isEqualTo(1);
    GenerationRequest waiting = requests(1, 0).get(0);

    Thread.currentThread().interrupt();
    Throwable thrown = catchThrowable(() -> worker.generateAsync(List.of(waiting)));
    boolean interruptKept = Thread.interrupted(); // also clears it for the tests that follow on this thread

    assertThat(thrown)
        .isInstanceOf(java.util.concurrent.CancellationException.class)
        .hasMessageContaining("interrupted")
        .hasMessageContaining(waiting.requestId());
    assertThat(interruptKept).as("interrupt flag kept").isTrue();
  }

  @Test
  void updateWeights_returnsTheVersionItLoaded() {
    GenerationWorkerActor worker = worker(4096, 8, EOS, ModelWeights.init(SPEC, 1));

    assertThat(worker.updateWeights(ref(ModelWeights.init(SPEC, 2).withVersion(7)))).isEqualTo(7);
    assertThat(worker.updateWeights(ref(ModelWeights.init(SPEC, 3).withVersion(8)))).isEqualTo(8);
  }

  @Test
  void updateWeights_laterGenerationsComeFromTheNewWeightsAndCarryTheirVersion() {
    ModelWeights next = ModelWeights.init(SPEC, 2).withVersion(3);
    GenerationWorkerActor worker = worker(4096, 8, EOS, ModelWeights.init(SPEC, 1));
    List<GenerationRequest> requests = requests(4, 0);
    List<GenerationResult> before = worker.generate(requests);

    worker.updateWeights(ref(next));
    List<GenerationResult> after = worker.generate(requests);

    List<GenerationResult> fresh = worker(4096, 8, EOS, next).generate(requests);
    assertThat(after).extracting(GenerationResult::weightVersion).containsOnly(3L);
    for (int i = 0; i < requests.size(); i++) {
      assertSameCompletion(after.get(i), fresh.get(i));
    }
    assertThat(tokens(after)).isNotEqualTo(tokens(before));
  }

  @Test
  void updateWeights_weightsWhoseVocabularyLacksTheEosTokenAreRejectedAndTheOldOnesKeepServing() {
    GenerationWorkerActor worker = worker(4096, 8, EOS, ModelWeights.init(SPEC, 1));
    ModelWeights tooSmall = ModelWeights.init(ModelSpec.tiny(EOS), 9).withVersion(1);

    assertThatThrownBy(() -> worker.updateWeights(ref(tooSmall)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("eosToken");
    assertThat(worker.generate(requests(1, 0))).extracting(GenerationResult::weightVersion).containsOnly(0L);
  }

  @Test
  void engineStats_countsFinishedRequestsAndTheirTokens() {
    GenerationWorkerActor worker = worker(512, 8, EOS, withEosBias(ModelWeights.init(SPEC, 1), -50f));
    List<GenerationRequest> requests = requests(2, 0);

    worker.generate(requests);
    EngineStats stats = worker.engineStats();

    int n = requests.size();
    assertThat(stats.requestsFinished(FinishReason.LENGTH)).isEqualTo(n);
    assertThat(stats.requestsFinishedTotal()).isEqualTo(n);
    assertThat(stats.generationTokens()).isEqualTo((long) n * MAX_TOKENS);
    assertThat(stats.promptTokens()).isEqualTo(requests.stream().mapToLong(r -> r.promptTokens().length).sum());
    assertThat(stats.kvTokenBudget()).isEqualTo(512);
  }

  @Test
  void calls_serversThatCannotBeReached_answerWithWhyTheBackendDidNotStart() throws Exception {
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort(); // closed again: nothing listens there
    }
    String url = "http://127.0.0.1:" + port;
    GenerationWorkerActor worker = new GenerationWorkerActor(Payload.of(new GenerationWorkerSpec(4096, 8, "test-model",
        TOKENIZER.eos(), null, dev.ravel.workers.generation.openai.ServerBackendSpec.builder().servers(List.of(url))
            .connectTimeout(java.time.Duration.ofSeconds(2)).build())));

    // Ray would report a constructor's exception only as "the actor died": each call says why instead
    assertThatThrownBy(worker::engineStats).isInstanceOf(IllegalStateException.class).hasMessageContaining(url);
    assertThatThrownBy(() -> worker.generate(requests(2, 0))).hasMessageContaining(url);
    assertThat(worker.flushTelemetry(1000)).isNotNull(); // the session's closing call still answers
  }

  // ---------------------------------------------------------------- helpers

  private static GenerationWorkerActor worker(int kvBudget, int maxRunning, int eos, ModelWeights initial) {
    return new GenerationWorkerActor(
        Payload.of(new GenerationWorkerSpec(kvBudget, maxRunning, "test-model", eos, initial)));
  }

  /** The GRPO requests of one step for {@link #PROBLEMS}, {@code groupSize} samples each. */
  private static List<GenerationRequest> requests(int groupSize, long step) {
    SamplingParams sampling = SamplingParams.builder().maxTokens(MAX_TOKENS).temperature(1.0).build();
    return GroupRequests.of(PROBLEMS, TOKENIZER, groupSize, sampling, step, new SplittableRandom(11));
  }

  /** {@code w} with {@code bias} added to the EOS token's output bias: +50 always samples EOS, -50 never. */
  private static ModelWeights withEosBias(ModelWeights w, float bias) {
    float[] p = w.params().clone();
    p[p.length - w.spec().vocabSize() + EOS] += bias; // the output bias b2 is the last vocabSize parameters
    return ModelWeights.of(w.spec(), w.version(), p);
  }

  private static ObjectRef<Payload<ModelWeights>> ref(ModelWeights w) {
    Payload<ModelWeights> payload = Payload.of(w);
    return new ObjectRef<>() {
      @Override
      public Payload<ModelWeights> get() {
        return payload;
      }

      @Override
      public Payload<ModelWeights> get(long timeoutMs) {
        return payload;
      }
    };
  }

  private static void assertSameCompletion(GenerationResult actual, GenerationResult expected) {
    assertThat(actual.requestId()).isEqualTo(expected.requestId());
    assertThat(actual.completionTokens()).containsExactly(expected.completionTokens());
    assertThat(actual.logprobs()).containsExactly(expected.logprobs());
    assertThat(actual.finishReason()).isEqualTo(expected.finishReason());
    assertThat(actual.weightVersion()).isEqualTo(expected.weightVersion());
  }

  private static List<String> tokens(List<GenerationResult> results) {
    return results.stream().map(r -> Arrays.toString(r.completionTokens())).toList();
  }
}
