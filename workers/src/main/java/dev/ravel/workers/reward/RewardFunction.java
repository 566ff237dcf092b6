package dev.ravel.workers.reward;

import dev.ravel.workers.task.Problem;
import java.util.List;

/**
 * Your reward for the Java runtime ({@code reward.class}): a public class with a public no-argument constructor,
 * on the workers' classpath, called by the reward environment with a batch of decoded completions. The Python
 * runtime takes {@code reward.function} instead.
 *
 * <pre>{@code
 * public final class ExactAnswer implements RewardFunction {
 *   public double[] score(List<Problem> problems, List<String> completions, long step) {
 *     double[] out = new double[completions.size()];
 *     for (int i = 0; i < out.length; i++) {
 *       out[i] = completions.get(i).equals(problems.get(i).answer()) ? 1 : 0;
 *     }
 *     return out;
 *   }
 * }
 * }</pre>
 */
public interface RewardFunction {
  /**
   * One finite reward per completion.
   *
   * @param problems the problem of each completion (prompt and reference answer)
   * @param completions the completions as text, up to their first end-of-sequence token
   * @param step the training step the completions are for, numbered from 1
   */
  double[] score(List<Problem> problems, List<String> completions, long step);

  /**
   * The reward function {@code className} names: loaded and constructed, checked to be one.
   *
   * @throws IllegalArgumentException naming the class when it is missing, not a {@link RewardFunction} or has no
   *     public no-argument constructor
   */
  static RewardFunction load(String className) {
    Class<?> c;
    try {
      c = Class.forName(className, true, Thread.currentThread().getContextClassLoader() != null
          ? Thread.currentThread().getContextClassLoader() : RewardFunction.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      throw new IllegalArgumentException("reward.class " + className + ": not found on the classpath (" + e + ")", e);
    }
    if (!RewardFunction.class.isAssignableFrom(c)) {
      throw new IllegalArgumentException("reward.class " + className + ": does not implement "
          + RewardFunction.class.getName());
    }
    try {
      return (RewardFunction) c.getConstructor().newInstance();
    } catch (NoSuchMethodException e) {
      throw new IllegalArgumentException("reward.class " + className + ": has no public no-argument constructor", e);
    } catch (ReflectiveOperationException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new IllegalArgumentException("reward.class " + className + ": its constructor failed: " + cause, cause);
    }
  }
}
