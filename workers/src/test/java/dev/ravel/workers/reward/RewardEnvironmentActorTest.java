package dev.ravel.workers.reward;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.workers.model.CharTokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import dev.ravel.workers.task.Problem;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reward logic on an actor built outside Ray (its telemetry is off without {@code RAVEL_TELEMETRY_RUN_ID}). */
final class RewardEnvironmentActorTest {
  private static final CharTokenizer TOKENIZER = CharTokenizer.arithmetic();
  private static final ArithmeticTask TASK = ArithmeticTask.standard();
  private static final Problem TWO_PLUS_THREE = TASK.problem(2, 3);
  private static final Problem FOUR_PLUS_FOUR = TASK.problem(4, 4);

  private final RewardEnvironmentActor reward = new RewardEnvironmentActor();

  private double[] rewards(List<Problem> problems, List<int[]> completions) {
    return reward.score(problems, completions, 1).rewards();
  }

  @Test
  void score_givesTheAnswerTextItReadWithoutComponents() {
    int[] answered = completion("5", true);
    int[] more = completion("77", false);
    int[] ignoredEos = Arrays.copyOf(answered, answered.length + more.length);
    System.arraycopy(more, 0, ignoredEos, answered.length, more.length);

    RewardScores s = reward.score(List.of(TWO_PLUS_THREE, TWO_PLUS_THREE), List.of(ignoredEos, completion("6", true)), 1);

    assertThat(s.texts()).containsExactly("5", "6");
    assertThat(s.components()).isEmpty();
    assertThat(s.failed()).isZero();
  }

  @Test
  void score_correctAnswerEndedByEosIsRewarded() {
    assertThat(rewards(List.of(TWO_PLUS_THREE), List.of(completion("5", true)))).containsExactly(1.0);
  }

  @Test
  void score_correctAnswerCutOffBeforeEosIsStillRewarded() {
    assertThat(rewards(List.of(TWO_PLUS_THREE), List.of(completion("5", false)))).containsExactly(1.0);
  }

  @Test
  void score_answerEndsAtTheFirstEosWhateverFollows() {
    int[] answered = completion("5", true);
    int[] more = completion("77", false);
    int[] ignoredEos = Arrays.copyOf(answered, answered.length + more.length);
    System.arraycopy(more, 0, ignoredEos, answered.length, more.length);
    int[] lateEos = completion("57", true);

    assertThat(rewards(List.of(TWO_PLUS_THREE, TWO_PLUS_THREE), List.of(ignoredEos, lateEos)))
        .containsExactly(1.0, 0.0);
  }

  @Test
  void score_wrongDigitGetsNothing() {
    assertThat(rewards(List.of(TWO_PLUS_THREE), List.of(completion("6", true)))).containsExactly(0.0);
  }

  @Test
  void score_correctDigitWithExtraCharactersGetsNothing() {
    List<Problem> problems = List.of(TWO_PLUS_THREE, TWO_PLUS_THREE, TWO_PLUS_THREE);
    List<int[]> completions = List.of(completion("55", true), completion("5=", true), completion("2+3=5", true));

    assertThat(rewards(problems, completions)).containsExactly(0.0, 0.0, 0.0);
  }

  @Test
  void score_onlyEosGetsNothing() {
    assertThat(rewards(List.of(TWO_PLUS_THREE), List.of(new int[] {TOKENIZER.eos()}))).containsExactly(0.0);
  }

  @Test
  void score_eachCompletionIsScoredAgainstItsOwnProblemInOrder() {
    List<Problem> problems = List.of(TWO_PLUS_THREE, FOUR_PLUS_FOUR, TWO_PLUS_THREE, FOUR_PLUS_FOUR);
    List<int[]> completions =
        List.of(completion("5", true), completion("5", true), completion("8", true), completion("8", true));

    assertThat(rewards(problems, completions)).containsExactly(1.0, 0.0, 0.0, 1.0);
  }

  @Test
  void score_moreProblemsThanCompletionsFailsNamingBothCounts() {
    assertThatThrownBy(() -> reward.score(List.of(TWO_PLUS_THREE, FOUR_PLUS_FOUR), List.of(completion("5", true)), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("2 problems but 1 completions");
  }

  @Test
  void score_moreCompletionsThanProblemsFailsNamingBothCounts() {
    assertThatThrownBy(() -> reward.score(List.of(TWO_PLUS_THREE),
        List.of(completion("5", true), completion("5", true), completion("5", true)), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("1 problems but 3 completions");
  }

  @Test
  void score_tokenOutsideTheVocabularyFailsNamingIt() {
    int outside = TOKENIZER.vocabSize();

    assertThatThrownBy(() -> reward.score(List.of(TWO_PLUS_THREE), List.of(new int[] {outside}), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(String.valueOf(outside));
  }

  /** {@code text} as token ids, followed by EOS when {@code eos}. */
  private static int[] completion(String text, boolean eos) {
    int[] ids = TOKENIZER.encode(text);
    if (!eos) {
      return ids;
    }
    int[] out = Arrays.copyOf(ids, ids.length + 1);
    out[ids.length] = TOKENIZER.eos();
    return out;
  }

  /** A reward of the test's own: the completion's length, a quarter per character, plus the step. */
  public static final class LengthReward implements RewardFunction {
    public LengthReward() {}

    @Override
    public double[] score(List<Problem> problems, List<String> completions, long step) {
      return completions.stream().mapToDouble(c -> c.length() * 0.25 + step).toArray();
    }
  }

  /** A reward function that raises. */
  public static final class Broken implements RewardFunction {
    @Override
    public double[] score(List<Problem> problems, List<String> completions, long step) {
      throw new IllegalStateException("no judge");
    }
  }

  private static RewardEnvironmentActor withClass(Class<?> c) {
    return new RewardEnvironmentActor(dev.ravel.workers.actor.Payload.of(c.getName()));
  }

  @Test
  void score_rewardClass_givesYourFunctionTheDecodedCompletionsAndTheStep() {
    RewardScores s = withClass(LengthReward.class).score(List.of(TWO_PLUS_THREE, TWO_PLUS_THREE),
        List.of(completion("5", true), completion("57", false)), 3);

    assertThat(s.rewards()).containsExactly(3.25, 3.5);
    assertThat(s.texts()).containsExactly("5", "57");
  }

  @Test
  void score_rewardClassThatRaises_failsNamingIt() {
    assertThatThrownBy(() -> withClass(Broken.class).score(List.of(TWO_PLUS_THREE), List.of(completion("5", true)), 1))
        .hasMessageStartingWith("reward.class " + Broken.class.getName() + ": raised")
        .hasMessageContaining("no judge");
  }

  @Test
  void load_notARewardFunctionOrMissing_isOneErrorNamingTheClass() {
    assertThatThrownBy(() -> RewardFunction.load("no.such.Reward")).hasMessageStartingWith(
        "reward.class no.such.Reward: not found on the classpath");
    assertThatThrownBy(() -> RewardFunction.load(String.class.getName())).hasMessage(
        "reward.class java.lang.String: does not implement " + RewardFunction.class.getName());
  }
}
