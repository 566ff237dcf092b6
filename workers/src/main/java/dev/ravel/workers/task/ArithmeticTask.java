package dev.ravel.workers.task;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Single-digit modular addition: prompts {@code "a+b="} with operands drawn uniformly from
 * {@code 0 .. maxOperand}, and the answer {@code (a + b) mod 10} written as one digit. The policy should
 * reply with that digit followed by EOS.
 *
 * <p><b>Reward</b> (verifiable, binary): {@code 1.0} when the decoded completion (EOS decodes to nothing)
 * is exactly the answer, else {@code 0.0}. A fresh model answers correctly well under 1% of the time,
 * yet a 32-prompt x 8-sample step holds about one success, whose group-relative advantage is large
 * ({@code (1 - 1/8) / std} = 2.6); learning that a digit and EOS are what is wanted generalises across
 * prompts, so the success rate climbs within a few steps. There is deliberately no partial credit for a
 * well-formed wrong digit: in our runs such a bonus made the policy settle on confident wrong digits and
 * learn the sums several times slower.
 *
 * <p>{@link #standard()} uses operands 0..4 (25 problems), which a {@code ModelSpec.tiny} model learns with
 * the default {@code GrpoConfig} in tens of steps; operands 0..9 (100 problems) take a few hundred. Immutable.
 */
public final class ArithmeticTask {
  private final int maxOperand;

  private ArithmeticTask(int maxOperand) {
    this.maxOperand = maxOperand;
  }

  /** Operands 0..4. */
  public static ArithmeticTask standard() {
    return of(4);
  }

  /** A task with operands in {@code 0 .. maxOperand}, which must be in {@code [0, 9]}. */
  public static ArithmeticTask of(int maxOperand) {
    if (maxOperand < 0 || maxOperand > 9) {
      throw new IllegalArgumentException("maxOperand must be in [0, 9], got " + maxOperand);
    }
    return new ArithmeticTask(maxOperand);
  }

  /** Largest operand. */
  public int maxOperand() {
    return maxOperand;
  }

  /** {@code n} problems drawn independently and uniformly. */
  public List<Problem> sample(int n, RandomGenerator rng) {
    if (n < 0) {
      throw new IllegalArgumentException("n must be >= 0, got " + n);
    }
    Objects.requireNonNull(rng, "rng");
    List<Problem> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(problem(rng.nextInt(maxOperand + 1), rng.nextInt(maxOperand + 1)));
    }
    return List.copyOf(out);
  }

  /** The problem {@code "a+b="}. */
  public Problem problem(int a, int b) {
    if (a < 0 || a > maxOperand) {
      throw new IllegalArgumentException("a must be in [0, " + maxOperand + "], got " + a);
    }
    if (b < 0 || b > maxOperand) {
      throw new IllegalArgumentException("b must be in [0, " + maxOperand + "], got " + b);
    }
    return new Problem(a + "+" + b + "=", Integer.toString((a + b) % 10));
  }

  /** The reward of {@code completion} (decoded, without EOS) for {@code problem}: 1.0 on an exact match, else 0.0. */
  public double reward(Problem problem, String completion) {
    Objects.requireNonNull(problem, "problem");
    Objects.requireNonNull(completion, "completion");
    return completion.equals(problem.answer()) ? 1.0 : 0.0;
  }

  @Override
  public String toString() {
    return "ArithmeticTask{maxOperand=" + maxOperand + "}";
  }
}
