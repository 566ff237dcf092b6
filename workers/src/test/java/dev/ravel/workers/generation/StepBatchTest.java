package dev.ravel.workers.generation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.RequestStats;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

final class StepBatchTest {
  private static final CharTokenizer TOKENIZER = CharTokenizer.arithmetic();
  private static final SamplingParams SAMPLING = SamplingParams.builder().maxTokens(4).temperature(1.0).topP(1.0)
      .seed(3).build();

  private static StepBatch plan(long seed, long step) {
    return StepBatch.plan(ArithmeticTask.standard(), TOKENIZER, 3, 2, SAMPLING, seed, step);
  }

  @Test
  void plan_sameRunSeedAndStepGiveTheSameBatchWherePlanned() {
    StepBatch a = plan(7, 4);
    StepBatch b = plan(7, 4);

    assertThat(a.problems()).isEqualTo(b.problems());
    assertThat(a.requests()).extracting(GenerationRequest::requestId)
        .containsExactly("s4-p0-0", "s4-p0-1", "s4-p1-0", "s4-p1-1", "s4-p2-0", "s4-p2-1");
    assertThat(a.requests()).extracting(r -> r.params().seed())
        .containsExactlyElementsOf(b.requests().stream().map(r -> r.params().seed()).toList());
  }

  @Test
  void plan_otherStepOrSeedGivesOtherSamplingSeeds() {
    List<Long> base = plan(7, 4).requests().stream().map(r -> r.params().seed()).toList();

    assertThat(plan(7, 5).requests().stream().map(r -> r.params().seed()).toList()).isNotEqualTo(base);
    assertThat(plan(8, 4).requests().stream().map(r -> r.params().seed()).toList()).isNotEqualTo(base);
    assertThat(base).doesNotHaveDuplicates();
  }

  @Test
  void problemPerRequest_repeatsEachProblemForItsGroup() {
    StepBatch b = plan(7, 0);

    assertThat(b.problemPerRequest()).containsExactly(b.problems().get(0), b.problems().get(0), b.problems().get(1),
        b.problems().get(1), b.problems().get(2), b.problems().get(2));
  }

  @Test
  void trajectories_carryTokensLogprobsRewardVersionAndGroupIndex() {
    StepBatch b = plan(7, 0);
    List<GenerationResult> results = new ArrayList<>();
    for (GenerationRequest r : b.requests()) {
      results.add(result(r, FinishReason.STOP, 3));
    }
    double[] rewards = {1, 0, 0, 1, 1, 1};

    List<Trajectory> ts = b.trajectories(results, rewards);

    assertThat(ts).extracting(Trajectory::groupIndex).containsExactly(0, 1, 0, 1, 0, 1);
    assertThat(ts).extracting(Trajectory::reward).containsExactly(1.0, 0.0, 0.0, 1.0, 1.0, 1.0);
    assertThat(ts).extracting(Trajectory::weightVersion).containsOnly(3L);
    assertThat(ts.get(2).requestId()).isEqualTo("s0-p1-0");
    assertThat(ts.get(2).prompt()).containsExactly(b.requests().get(2).promptTokens());
  }

  @Test
  void trajectories_failedGenerationFailsWithTheEnginesReason() {
    StepBatch b = plan(7, 0);
    List<GenerationResult> results = new ArrayList<>();
    for (GenerationRequest r : b.requests()) {
      results.add(result(r, FinishReason.STOP, 0));
    }
    results.set(3, GenerationResult.builder().requestId("s0-p1-1").promptTokens(new int[] {1})
        .finishReason(FinishReason.ERROR).error("prompt exceeds the KV budget").stats(stats()).build());

    assertThatThrownBy(() -> b.trajectories(results, new double[6])).isInstanceOf(IllegalStateException.class)
        .hasMessage("generation of s0-p1-1 ended error: prompt exceeds the KV budget");
  }

  @Test
  void trajectories_resultsOutOfRequestOrderAreRejected() {
    StepBatch b = plan(7, 0);
    List<GenerationResult> results = new ArrayList<>();
    for (GenerationRequest r : b.requests()) {
      results.add(result(r, FinishReason.STOP, 0));
    }
    java.util.Collections.swap(results, 0, 1);

    assertThatThrownBy(() -> b.trajectories(results, new double[6])).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("result 0 is for request s0-p0-1, expected s0-p0-0");
    assertThatThrownBy(() -> b.trajectories(results.subList(0, 5), new double[6]))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expected 6 results");
  }

  @Test
  void requireSucceeded_abortAndErrorFailStopAndLengthPass() {
    GenerationRequest r = plan(7, 0).requests().get(0);

    assertThat(result(r, FinishReason.STOP, 0).requireSucceeded().succeeded()).isTrue();
    assertThat(result(r, FinishReason.LENGTH, 0).succeeded()).isTrue();
    GenerationResult aborted = GenerationResult.builder().requestId("x").promptTokens(new int[] {1})
        .finishReason(FinishReason.ABORT).stats(stats()).build();
    assertThat(aborted.succeeded()).isFalse();
    assertThatThrownBy(aborted::requireSucceeded).hasMessage("generation of x ended abort");
  }

  private static GenerationResult result(GenerationRequest r, FinishReason reason, long version) {
    return GenerationResult.builder().requestId(r.requestId()).promptTokens(r.promptTokens())
        .completionTokens(new int[] {5, 6}).logprobs(new float[] {-0.5f, -1.5f}).finishReason(reason)
        .weightVersion(version).stats(stats()).build();
  }

  private static RequestStats stats() {
    return RequestStats.builder().arrivalEpochNanos(10).finishEpochNanos(20).build();
  }
}
