package dev.ravel.workers.buffer;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import dev.ravel.workers.actor.Untraced;
import java.util.List;

/**
 * Holds generated groups between the collector and the trainer (async GRPO). Each group records the
 * weight version that generated it and the step it was generated for; a group whose weights are more than
 * the age bound behind the step that would train on it is dropped and counted. Must be created with a
 * max concurrency above 1 so that a waiting {@code take} does not block {@code push}.
 */
@ActorRole(name = "replay_buffer", spans = "buffer")
public interface ReplayBuffer extends RavelRole {
  /** Adds groups; returns the number held. */
  int push(List<Rollout> rollouts);

  /**
   * Waits up to {@code timeoutMs} for {@code groups} groups usable at training step {@code step}
   * (weight version at least {@code step - maxAgeSteps}) and removes them, oldest first. Groups too old
   * for {@code step} are dropped. Returns fewer than asked when the time runs out.
   */
  BufferBatch take(long step, int groups, long maxAgeSteps, long timeoutMs);

  @Untraced
  BufferStats stats();
}
