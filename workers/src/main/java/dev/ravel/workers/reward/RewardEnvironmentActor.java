package dev.ravel.workers.reward;

import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import dev.ravel.workers.task.Problem;
import java.util.List;

/** {@link RewardEnvironment} for the {@link ArithmeticTask}. */
public final class RewardEnvironmentActor extends RavelActor implements RewardEnvironment {
  private final Tokenizer tokenizer = CharTokenizer.arithmetic();
  private final ArithmeticTask task = ArithmeticTask.standard();

  public RewardEnvironmentActor() {}

  @Override
  public RewardScores score(List<Problem> problems, List<int[]> completions, long step) {
    if (problems.size() != completions.size()) {
      throw new IllegalArgumentException(problems.size() + " problems but " + completions.size() + " completions");
    }
    double[] out = new double[problems.size()];
    List<String> texts = new java.util.ArrayList<>(out.length);
    for (int i = 0; i < out.length; i++) {
      int[] c = completions.get(i);
      // the answer ends at the first EOS (with generation.ignore_eos the completion goes on past it)
      String text = tokenizer.decode(c, 0, answerLength(c));
      texts.add(text);
      out[i] = task.reward(problems.get(i), text);
    }
    return RewardScores.of(out, texts);
  }

  /** Tokens before the first EOS, or all of them. */
  private int answerLength(int[] completion) {
    for (int i = 0; i < completion.length; i++) {
      if (completion[i] == tokenizer.eos()) {
        return i;
      }
    }
    return completion.length;
  }
}
