package dev.ravel.workers.reward;

import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import dev.ravel.workers.task.Problem;
import java.util.List;

/**
 * {@link RewardEnvironment} of the Java runtime: the {@link ArithmeticTask}'s reward, or your {@link RewardFunction}
 * ({@code reward.class}) on the same decoded completions.
 */
public final class RewardEnvironmentActor extends RavelActor implements RewardEnvironment {
  private final Tokenizer tokenizer = CharTokenizer.arithmetic();
  private final ArithmeticTask task = ArithmeticTask.standard();

  /** Null: the task's own reward. */
  private final RewardFunction function;
  private final String functionName;

  public RewardEnvironmentActor() {
    this.function = null;
    this.functionName = null;
  }

  /** With {@code className}'s {@link RewardFunction} (empty: the task's own reward). */
  public RewardEnvironmentActor(Payload<String> classNamePayload) {
    String className = classNamePayload.value();
    this.function = className == null || className.isEmpty() ? null : RewardFunction.load(className);
    this.functionName = className;
  }

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
      out[i] = function == null ? task.reward(problems.get(i), text) : 0;
    }
    if (function != null) {
      double[] given;
      try {
        given = function.score(List.copyOf(problems), List.copyOf(texts), step);
      } catch (RuntimeException e) {
        throw new IllegalStateException("reward.class " + functionName + ": raised " + e, e);
      }
      if (given == null || given.length != out.length) {
        throw new IllegalStateException("reward.class " + functionName + ": returned "
            + (given == null ? "null" : given.length + " rewards") + " for " + out.length + " completions");
      }
      for (int i = 0; i < given.length; i++) {
        if (!Double.isFinite(given[i])) {
          throw new IllegalStateException("reward.class " + functionName + ": reward " + i + " is " + given[i]
              + ", not a finite number");
        }
      }
      out = given.clone();
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
