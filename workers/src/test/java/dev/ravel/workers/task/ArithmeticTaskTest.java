package dev.ravel.workers.task;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.workers.model.CharTokenizer;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

final class ArithmeticTaskTest {
  @Test
  void problem_answerIsTheSumModuloTen() {
    ArithmeticTask task = ArithmeticTask.of(9);

    assertThat(task.problem(3, 4)).isEqualTo(new Problem("3+4=", "7"));
    assertThat(task.problem(7, 8)).isEqualTo(new Problem("7+8=", "5"));
    assertThat(task.problem(0, 0)).isEqualTo(new Problem("0+0=", "0"));
  }

  @Test
  void reward_isOneOnlyForTheExactAnswer() {
    ArithmeticTask task = ArithmeticTask.standard();
    Problem p = task.problem(2, 3);

    assertThat(task.reward(p, "5")).isEqualTo(1.0);
    assertThat(task.reward(p, "4")).isEqualTo(0.0);
    assertThat(task.reward(p, "55")).isEqualTo(0.0);
    assertThat(task.reward(p, "5=")).isEqualTo(0.0);
    assertThat(task.reward(p, "")).isEqualTo(0.0);
  }

  @Test
  void sample_coversEveryOperandPairWithinRangeAndIsReproducible() {
    ArithmeticTask task = ArithmeticTask.standard();

    List<Problem> problems = task.sample(2000, new SplittableRandom(1));

    Set<String> prompts = new HashSet<>();
    for (Problem p : problems) {
      prompts.add(p.prompt());
    }
    assertThat(prompts).hasSize(25); // every a, b in 0..4
    assertThat(prompts).allMatch(s -> s.matches("[0-4]\\+[0-4]="));
    assertThat(task.sample(50, new SplittableRandom(9))).isEqualTo(task.sample(50, new SplittableRandom(9)));
  }

  @Test
  void sample_promptsAndAnswersEncodeWithTheArithmeticTokenizer() {
    CharTokenizer tok = CharTokenizer.arithmetic();
    for (Problem p : ArithmeticTask.of(9).sample(200, new SplittableRandom(2))) {
      assertThat(tok.decode(tok.encode(p.prompt() + p.answer()), 0, 5)).isEqualTo(p.prompt() + p.answer());
    }
  }

  @Test
  void of_operandOutsideDigitsIsRejected() {
    assertThatThrownBy(() -> ArithmeticTask.of(10)).hasMessageStartingWith("maxOperand");
    assertThatThrownBy(() -> ArithmeticTask.standard().problem(5, 0)).hasMessageStartingWith("a ");
  }

  @Test
  void problem_emptyPromptIsRejected() {
    assertThatThrownBy(() -> new Problem("", "1")).hasMessageStartingWith("prompt");
  }
}
