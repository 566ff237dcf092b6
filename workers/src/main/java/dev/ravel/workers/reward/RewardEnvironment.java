package dev.ravel.workers.reward;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import dev.ravel.workers.task.Problem;
import java.util.List;

/** Scores completions with the task's verifiable reward. Calls run in spans {@code rl.reward.<method>}. */
@ActorRole(name = "reward_environment", spans = "reward")
public interface RewardEnvironment extends RavelRole {
  /**
   * What a reward environment does when the reward function raises ({@code reward.on_error}, the contract's
   * {@code reward_on_error}): {@code fail} the call (the default), or score the call's completions {@code zero}.
   */
  List<String> ON_ERROR = List.of("fail", "zero");

  /**
   * The reward of {@code completions.get(i)} (token ids) for {@code problems.get(i)}, with the completions as
   * the reward read them and the reward's named components.
   *
   * @param step the training step the completions are for, numbered from 1 (your reward function's {@code step})
   */
  RewardScores score(List<Problem> problems, List<int[]> completions, long step);
}
