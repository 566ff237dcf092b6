package dev.ravel.driver.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.workers.engine.FinishReason;
import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.task.DatasetPrompts;
import dev.ravel.workers.task.Problem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class EvaluationTest {
  @TempDir
  Path tmp;

  private Evaluation evaluation(int every, int samples) throws IOException {
    Path f = Files.writeString(tmp.resolve("eval.jsonl"), "{\"prompt\":\"1+1=\",\"tokens\":[3,1,3],\"answer\":\"2\"}\n"
        + "{\"prompt\":\"2+2=\",\"tokens\":[4,1,4],\"answer\":\"4\"}\n");
    return new Evaluation(DatasetPrompts.read(f), every, SamplingParams.builder().maxTokens(2).temperature(0).seed(7)
        .build(), samples, 1.0);
  }

  @Test
  void at_isTheFirstStepAndEveryNthAfter() throws IOException {
    Evaluation e = evaluation(10, 1);

    assertThat(List.of(0, 1, 9, 10, 20, 21).stream().filter(e::at)).containsExactly(0, 10, 20);
    assertThat(evaluation(0, 1).at(0)).isFalse();
  }

  @Test
  void requests_askEveryRowSamplesTimesAtTheEvalTemperature() throws IOException {
    List<GenerationRequest> r = evaluation(5, 2).requests(10);

    assertThat(r).extracting(GenerationRequest::requestId).containsExactly("e10-p0-0", "e10-p0-1", "e10-p1-0",
        "e10-p1-1");
    assertThat(r.get(2).promptTokens()).containsExactly(4, 1, 4);
    assertThat(r).allSatisfy(x -> assertThat(x.params().temperature()).isZero());
    assertThat(r.stream().map(x -> x.params().seed()).distinct()).hasSize(4);
  }

  @Test
  void run_scoresEveryCompletionAndCountsThoseAtThePassThreshold() throws IOException {
    Evaluation e = evaluation(5, 2);
    List<List<Problem>> scored = new ArrayList<>();

    StepRecord.Eval s = e.run(0, requests -> requests.stream().map(q -> result(q.requestId())).toList(),
        (problems, completions) -> {
          scored.add(problems);
          return dev.ravel.workers.reward.RewardScores.of(new double[] {1.0, 0.0, 1.0, 0.5},
              List.of("a", "b", "c", "d"));
        });

    assertThat(scored.get(0)).extracting(Problem::answer).containsExactly("2", "2", "4", "4");
    assertThat(s.completions()).isEqualTo(4);
    assertThat(s.reward()).isEqualTo(0.625);
    assertThat(s.accuracy()).isEqualTo(0.5);
  }

  private static GenerationResult result(String id) {
    return GenerationResult.builder().requestId(id).promptTokens(new int[] {1}).completionTokens(new int[] {2})
        .logprobs(new float[] {-0.1f}).finishReason(FinishReason.STOP)
        .stats(dev.ravel.workers.engine.RequestStats.builder().arrivalEpochNanos(10).finishEpochNanos(20).build()).build();
  }
}
