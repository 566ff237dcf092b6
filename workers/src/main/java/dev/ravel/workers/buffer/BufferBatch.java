package dev.ravel.workers.buffer;

import java.io.Serializable;
import java.util.List;

/**
 * What one {@link ReplayBuffer#take} returned.
 *
 * @param rollouts the groups to train on, oldest first
 * @param droppedForAge groups discarded during this call because their weights were too old (wasted work)
 * @param droppedTrajectories trajectories in those groups
 */
public record BufferBatch(List<Rollout> rollouts, int droppedForAge, int droppedTrajectories) implements Serializable {
  public BufferBatch {
    rollouts = List.copyOf(rollouts);
  }
}
