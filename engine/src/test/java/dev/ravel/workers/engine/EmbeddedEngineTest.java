package dev.ravel.workers.engine;

import static dev.ravel.workers.engine.Requests.batch;
import static dev.ravel.workers.engine.Requests.config;
import static dev.ravel.workers.engine.Requests.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ravel.telemetry.context.TraceCarrier;
import io.opentelemetry.api.OpenTelemetry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120) // a hang guard only: nothing here asserts a duration
final class EmbeddedEngineTest {
  private final List<EmbeddedEngine> engines = new ArrayList<>();

  private EmbeddedEngine engine(EngineConfig config, FakeModel model) {
    EmbeddedEngine e = new EmbeddedEngine(config, model, OpenTelemetry.noop());
    engines.add(e);
    return e;
  }

  @AfterEach
  void closeEngines() {
    engines.forEach(EmbeddedEngine::close);
  }

  @Test
  void generate_ignoreEos_everyCompletionRunsToMaxTokensPastItsEos() {
    EmbeddedEngine engine = engine(config().build(), FakeModel.of(1).eosLogit(0.5f));
    List<GenerationRequest> requests = batch("i", 24, 12).stream()
        .map(r -> GenerationRequest.of(r.requestId(), r.promptTokens(), r.params().toBuilder().ignoreEos(true).build(),
            null))
        .toList();

    List<GenerationResult> results = engine.generate(requests);

    assertThat(results).allSatisfy(r -> {
      assertThat(r.completionTokens()).hasSize(12);
      assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
    });
    // the same model stops early without the flag, so EOS was sampled and kept as a token
    assertThat(results.stream().flatMapToInt(r -> Arrays.stream(r.completionTokens()))).contains(FakeModel.EOS);
    assertThat(engine.snapshot().generationTokens()).isEqualTo(24L * 12);
  }

  @Test
  void generate_batch_allFinishInInputOrderWithConsistentCounts() {
    EmbeddedEngine engine = engine(config().build(), FakeModel.of(1).eosLogit(0.5f));
    List<GenerationRequest> requests = batch("b", 24, 12);

    List<GenerationResult> results = engine.generate(requests);

    assertThat(results).extracting(GenerationResult::requestId)
        .containsExactlyElementsOf(requests.stream().map(GenerationRequest::requestId).toList());
    long promptTotal = 0;
    long completionTotal = 0;
    for (int i = 0; i < results.size(); i++) {
      GenerationResult r = results.get(i);
      int[] completion = r.completionTokens();
      assertThat(r.promptTokens()).isEqualTo(requests.get(i).promptTokens());
      assertThat(completion.length).isBetween(1, 12);
      assertThat(r.logprobs()).hasSize(completion.length);
      for (float lp : r.logprobs()) {
        assertThat(lp).isLessThanOrEqualTo(0f).isGreaterThan(Float.NEGATIVE_INFINITY);
      }
      boolean endsOnEos = completion[completion.length - 1] == FakeModel.EOS;
      assertThat(r.finishReason()).isEqualTo(endsOnEos ? FinishReason.STOP : FinishReason.LENGTH);
      if (!endsOnEos) {
        assertThat(completion).hasSize(12);
      }
      assertThat(Arrays.stream(completion, 0, completion.length - 1)).doesNotContain(FakeModel.EOS);
      assertThat(r.error()).isNull();
      assertThat(r.weightVersion()).isEqualTo(1);
      assertThat(r.stats().promptTokens()).isEqualTo(r.promptTokens().length);
      assertThat(r.stats().completionTokens()).isEqualTo(completion.length);
      assertThat(r.stats().preemptions()).isZero();
      assertThat(r.traced()).isFalse();
      promptTotal += r.promptTokens().length;
      completionTotal += completion.length;
    }
    assertThat(results).extracting(GenerationResult::finishReason).contains(FinishReason.STOP, FinishReason.LENGTH);
    EngineStats stats = engine.snapshot();
    assertThat(stats.requestsFinishedTotal()).isEqualTo(24);
    assertThat(stats.requestsFinished(FinishReason.STOP) + stats.requestsFinished(FinishReason.LENGTH)).isEqualTo(24);
    assertThat(stats.promptTokens()).isEqualTo(promptTotal);
    assertThat(stats.generationTokens()).isEqualTo(completionTotal);
    assertThat(stats.running()).isZero();
    assertThat(stats.waiting()).isZero();
    assertThat(stats.kvTokensUsed()).isZero();
    assertThat(stats.kvTokenBudget()).isEqualTo(4096);
  }

  @Test
  void generate_fixedSeeds_sameCompletionsOnAnotherEngineAndOtherSeedsDiffer() {
    List<GenerationRequest> requests = batch("d", 10, 16);
    List<GenerationResult> first = engine(config().build(), FakeModel.of(1)).generate(requests);
    List<GenerationResult> second = engine(config().maxRunningRequests(3).build(), FakeModel.of(1)).generate(requests);
    List<GenerationRequest> reseeded = requests.stream()
        .map(r -> GenerationRequest.of(r.requestId(), r.promptTokens(),
            r.params().toBuilder().seed(r.params().seed() + 1000).build(), r.carrier()))
        .toList();
    List<GenerationResult> third = engine(config().build(), FakeModel.of(1)).generate(reseeded);

    int differing = 0;
    for (int i = 0; i < requests.size(); i++) {
      assertThat(second.get(i).completionTokens()).isEqualTo(first.get(i).completionTokens());
      assertThat(second.get(i).logprobs()).isEqualTo(first.get(i).logprobs());
      if (!Arrays.equals(third.get(i).completionTokens(), first.get(i).completionTokens())) {
        differing++;
      }
    }
    assertThat(differing).isGreaterThan(5);
  }

  @Test
  void generate_logprobs_areLogSoftmaxOfTheModelsLogitsAtTheRequestTemperature() {
    FakeModel model = FakeModel.of(3).eosLogit(FakeModel.NEVER);
    EmbeddedEngine engine = engine(config().build(), model);
    int[] prompt = Requests.prompt(5, 9);
    for (double temperature : new double[] {0.0, 0.7, 1.0, 1.5}) {
      SamplingParams params = SamplingParams.builder().maxTokens(4).temperature(temperature).seed(42).build();
      GenerationResult r = engine.submit(GenerationRequest.of("t" + temperature, prompt, params, null)).join();

      int[] completion = r.completionTokens();
      float[] logits = new float[FakeModel.VOCAB];
      for (int i = 0; i < completion.length; i++) {
        int last = i == 0 ? prompt[prompt.length - 1] : completion[i - 1];
        model.logitsAfter(last, prompt.length + i, logits);
        double t = temperature == 0 ? 1.0 : temperature;
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
          max = Math.max(max, l / t);
        }
        double sum = 0;
        for (float l : logits) {
          sum += Math.exp(l / t - max);
        }
        assertThat((double) r.logprobs()[i]).isCloseTo(logits[completion[i]] / t - max - Math.log(sum), within(1e-5));
        if (temperature == 0) {
          int argmax = 0;
          for (int v = 1; v < logits.length; v++) {
            argmax = logits[v] > logits[argmax] ? v : argmax;
          }
          assertThat(completion[i]).isEqualTo(argmax);
        }
      }
    }
  }

  @Test
  void generate_maxRunningTwo_neverRunsMoreThanTwoAndLaterRequestsWait() {
    EmbeddedEngine engine = engine(config().maxRunningRequests(2).build(),
        FakeModel.of(1).eosLogit(FakeModel.NEVER).delayed(100_000));
    List<GenerationRequest> requests = batch("c", 5, 10);

    List<GenerationResult> results = engine.generate(requests);

    assertThat(results).allSatisfy(r -> assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH));
    assertThat(engine.peakRunning()).isEqualTo(2);
    for (GenerationResult r : results) {
      long at = r.stats().scheduledEpochNanos();
      long runningThen = results.stream()
          .filter(o -> o.stats().scheduledEpochNanos() <= at && o.stats().finishEpochNanos() > at).count();
      assertThat(runningThen).as("requests running when %s was admitted", r.requestId()).isLessThanOrEqualTo(2);
    }
    long firstFreeSlot = Math.min(results.get(0).stats().finishEpochNanos(), results.get(1).stats().finishEpochNanos());
    for (GenerationResult r : results.subList(2, 5)) {
      assertThat(r.stats().timeInQueue()).as(r.requestId()).isGreaterThan(0);
      assertThat(r.stats().scheduledEpochNanos()).as(r.requestId()).isGreaterThanOrEqualTo(firstFreeSlot);
    }
    assertThat(engine.snapshot().requestsFinished(FinishReason.LENGTH)).isEqualTo(5);
  }

  @Test
  void generate_smallKvBudget_preemptsAndRecomputesToTheSameTokens() {
    List<GenerationRequest> requests = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      SamplingParams p = SamplingParams.builder().maxTokens(24).temperature(1.0).topP(0.9).seed(100 + i).build();
      requests.add(GenerationRequest.of("p-" + i, Requests.prompt(4 + i % 3, i), p, TraceCarrier.EMPTY));
    }
    FakeModel model = FakeModel.of(1).eosLogit(FakeModel.NEVER);
    EmbeddedEngine roomy = engine(config().build(), model);
    EmbeddedEngine tight = engine(config().kvTokenBudget(40).build(), model);

    List<GenerationResult> expected = roomy.generate(requests);
    List<GenerationResult> actual = tight.generate(requests);

    assertThat(roomy.snapshot().preemptions()).isZero();
    assertThat(tight.snapshot().preemptions()).isPositive();
    assertThat(actual).extracting(r -> r.stats().preemptions()).anySatisfy(n -> assertThat(n).isPositive());
    assertThat(actual.stream().mapToLong(r -> r.stats().preemptions()).sum())
        .isEqualTo(tight.snapshot().preemptions());
    for (int i = 0; i < requests.size(); i++) {
      assertThat(actual.get(i).finishReason()).isEqualTo(FinishReason.LENGTH);
      assertThat(actual.get(i).completionTokens()).as(requests.get(i).requestId())
          .isEqualTo(expected.get(i).completionTokens());
      assertThat(actual.get(i).logprobs()).isEqualTo(expected.get(i).logprobs());
    }
    assertThat(tight.snapshot().kvTokensUsed()).isZero();
  }

  @Test
  void submit_promptLargerThanKvBudget_errorsNamingTheSizesWhileOthersAreServed() {
    EmbeddedEngine engine = engine(config().kvTokenBudget(16).build(), FakeModel.of(1));
    List<GenerationRequest> requests = List.of(
        request("ok-0", 4, 6, 0),
        GenerationRequest.of("huge", Requests.prompt(20, 1), Requests.params(6, 1), null),
        GenerationRequest.of("exact", Requests.prompt(16, 2), Requests.params(6, 2), null),
        GenerationRequest.of("alien", new int[] {1, 2, FakeModel.VOCAB + 3}, Requests.params(6, 3), null),
        request("ok-1", 5, 6, 4));

    List<GenerationResult> results = engine.generate(requests);

    GenerationResult huge = results.get(1);
    assertThat(huge.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(huge.error()).contains("20 tokens", "budget of 16");
    assertThat(huge.completionTokens()).isEmpty();
    assertThat(huge.weightVersion()).isEqualTo(GenerationResult.NO_VERSION);
    assertThat(huge.stats().scheduledEpochNanos()).isZero();
    assertThat(results.get(2).finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(results.get(2).error()).contains("16 tokens", "17");
    assertThat(results.get(3).finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(results.get(3).error()).contains("token " + (FakeModel.VOCAB + 3), "index 2");
    for (GenerationResult ok : List.of(results.get(0), results.get(4))) {
      assertThat(ok.finishReason()).isIn(FinishReason.STOP, FinishReason.LENGTH);
      assertThat(ok.completionTokens()).isNotEmpty();
    }
    assertThat(engine.snapshot().requestsFinished(FinishReason.ERROR)).isEqualTo(3);
    assertThat(engine.submit(request("after", 3, 4, 9)).join().finishReason()).isNotEqualTo(FinishReason.ERROR);
  }

  @Test
  void generate_sequenceOutgrowingTheWholeBudget_finishesWithLength() {
    EmbeddedEngine engine = engine(config().kvTokenBudget(10).build(), FakeModel.of(1).eosLogit(FakeModel.NEVER));

    GenerationResult r = engine.submit(request("long", 4, 100, 1)).join();

    assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
    assertThat(r.promptTokens().length + r.completionTokens().length).isLessThanOrEqualTo(11);
    assertThat(r.completionTokens()).isNotEmpty();
  }

  @Test
  void constructor_eosOutsideVocabulary_isRejectedNamingTheField() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() ->
            new EmbeddedEngine(config().eosToken(FakeModel.VOCAB).build(), FakeModel.of(1), OpenTelemetry.noop()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("eosToken:");
  }
}
