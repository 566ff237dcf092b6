package dev.ravel.workers.generation;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.task.Problem;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

final class GroupRequestsTest {
  private static final CharTokenizer TOKENIZER = CharTokenizer.arithmetic();
  private static final SamplingParams SAMPLING =
      SamplingParams.builder().maxTokens(5).temperature(0.7).topP(0.9).seed(123).build();
  private static final List<Problem> PROBLEMS = List.of(new Problem("1+2=", "3"), new Problem("4+4=", "8"));

  @Test
  void of_namesRequestsByStepPromptAndSamplePromptMajor() {
    List<GenerationRequest> requests = GroupRequests.of(PROBLEMS, TOKENIZER, 3, SAMPLING, 7, new SplittableRandom(1));

    assertThat(requests).extracting(GenerationRequest::requestId)
        .containsExactly("s7-p0-0", "s7-p0-1", "s7-p0-2", "s7-p1-0", "s7-p1-1", "s7-p1-2");
  }

  @Test
  void of_everySampleOfAGroupGetsItsProblemsEncodedPrompt() {
    List<GenerationRequest> requests = GroupRequests.of(PROBLEMS, TOKENIZER, 3, SAMPLING, 0, new SplittableRandom(1));

    for (int i = 0; i < 3; i++) {
      assertThat(requests.get(i).promptTokens()).containsExactly(TOKENIZER.encode("1+2="));
      assertThat(requests.get(3 + i).promptTokens()).containsExactly(TOKENIZER.encode("4+4="));
    }
  }

  @Test
  void of_eachGroupDrawsASeedAndItsSamplesCountUpFromItAsVllmSeedsChoices() {
    List<GenerationRequest> requests = GroupRequests.of(PROBLEMS, TOKENIZER, 3, SAMPLING, 0, new SplittableRandom(42));

    SplittableRandom same = new SplittableRandom(42);
    for (int p = 0; p < PROBLEMS.size(); p++) {
      long groupSeed = same.nextLong();
      for (int g = 0; g < 3; g++) {
        assertThat(requests.get(p * 3 + g).params()).isEqualTo(SAMPLING.withSeed(groupSeed + g));
      }
    }
    assertThat(requests).extracting(r -> r.params().seed()).doesNotHaveDuplicates();
  }

  @Test
  void of_carrierIsEmptyForTheWorkerToStamp() {
    List<GenerationRequest> requests = GroupRequests.of(PROBLEMS, TOKENIZER, 2, SAMPLING, 0, new SplittableRandom(1));

    assertThat(requests).extracting(GenerationRequest::carrier).containsOnly(TraceCarrier.EMPTY);
  }
}
