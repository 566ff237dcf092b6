package dev.ravel.workers.reward;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import dev.ravel.workers.task.Problem;
import java.util.List;

/** Scores completions with the task's verifiable reward. Calls run in spans {@code rl.reward.<method>}. */
@ActorRole(name = "reward_environment", spans = "reward")
public interface RewardEnvironment extends RavelRole {
  /** The reward of {@code completions.get(i)} (token ids) for {@code problems.get(i)}. */
  double[] score(List<Problem> problems, List<int[]> completions);
}
