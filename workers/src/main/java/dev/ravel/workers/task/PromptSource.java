package dev.ravel.workers.task;

import dev.ravel.workers.model.Tokenizer;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Where a run's prompts come from: each step's problems, drawn deterministically from the run's seed and the
 * step (the same step of the same run gets the same prompts, a resumed run's included), and each prompt's
 * token ids. The built-in digit task ({@link #of(ArithmeticTask, Tokenizer)}) or your data ({@link DatasetPrompts}).
 */
public interface PromptSource {
  /** Step {@code step}'s {@code n} problems. */
  List<Problem> sample(int n, long runSeed, long step);

  /** {@code problem}'s prompt as token ids. */
  int[] encode(Problem problem);

  /** The built-in task: problems drawn at random (with replacement) from {@code task}, encoded by {@code tokenizer}. */
  static PromptSource of(ArithmeticTask task, Tokenizer tokenizer) {
    return new PromptSource() {
      @Override
      public List<Problem> sample(int n, long runSeed, long step) {
        return task.sample(n, new SplittableRandom(runSeed * PROBLEM_STREAM + step));
      }

      @Override
      public int[] encode(Problem problem) {
        return tokenizer.encode(problem.prompt());
      }
    };
  }

  /** The stream the built-in task's problems of a step are drawn from (with the run's seed and the step). */
  long PROBLEM_STREAM = 1_000_003L;
}
