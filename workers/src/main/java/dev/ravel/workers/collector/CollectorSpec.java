package dev.ravel.workers.collector;

import dev.ravel.workers.task.DatasetPrompts;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.buffer.ReplayBuffer;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.fault.Failover;
import dev.ravel.workers.generation.GenerationWorker;
import dev.ravel.workers.reward.RewardEnvironment;
import java.io.Serializable;
import java.util.List;

/**
 * What a collector works with.
 *
 * @param promptsPerStep groups per target step
 * @param groupSize completions per prompt (G)
 * @param lead how many steps ahead of the published version it generates ({@code max_trajectory_age_steps + 1})
 * @param maxInFlight generate calls in flight at once
 * @param groupsPerCall groups per generate call (a target step's groups go out in calls of this many, round
 *     robin over the workers)
 * @param maxRestarts how often Ray restarts a worker or the reward environment (a call to one whose process
 *     died is issued again, at most this many times)
 * @param firstTarget the first target step (0, or the step a resumed run goes on with)
 * @param restartWaitMs how long a call waits for a worker whose process died to be restarted
 *     ({@code cluster.node_loss_timeout_s})
 */
public record CollectorSpec(List<RavelActorHandle<GenerationWorker>> workers,
    List<RavelActorHandle<RewardEnvironment>> rewards, RavelActorHandle<ReplayBuffer> buffer, int promptsPerStep, int groupSize, SamplingParams sampling, long seed,
    int lead, int maxInFlight, int groupsPerCall, int maxRestarts, long firstTarget, DatasetPrompts data,
    long restartWaitMs) implements Serializable {
  /** As the canonical constructor, waiting {@link Failover#RESTART_WAIT_MS} for a restart. */
  public CollectorSpec(List<RavelActorHandle<GenerationWorker>> workers,
      List<RavelActorHandle<RewardEnvironment>> rewards, RavelActorHandle<ReplayBuffer> buffer, int promptsPerStep,
      int groupSize, SamplingParams sampling, long seed, int lead, int maxInFlight, int groupsPerCall, int maxRestarts,
      long firstTarget, DatasetPrompts data) {
    this(workers, rewards, buffer, promptsPerStep, groupSize, sampling, seed, lead, maxInFlight, groupsPerCall,
        maxRestarts, firstTarget, data, Failover.RESTART_WAIT_MS);
  }

  /** A collector of the built-in digit task. */
  public CollectorSpec(List<RavelActorHandle<GenerationWorker>> workers, RavelActorHandle<RewardEnvironment> reward,
      RavelActorHandle<ReplayBuffer> buffer, int promptsPerStep, int groupSize, SamplingParams sampling, long seed,
      int lead, int maxInFlight, int groupsPerCall, int maxRestarts, long firstTarget) {
    this(workers, List.of(reward), buffer, promptsPerStep, groupSize, sampling, seed, lead, maxInFlight,
        groupsPerCall, maxRestarts, firstTarget, null);
  }

  public CollectorSpec {
    workers = List.copyOf(workers);
    rewards = List.copyOf(rewards);
    if (rewards.isEmpty()) {
      throw new IllegalArgumentException("rewards: at least one reward environment");
    }
    if (workers.isEmpty()) {
      throw new IllegalArgumentException("workers: at least one generation worker");
    }
    if (lead < 1) {
      throw new IllegalArgumentException("lead must be at least 1, got " + lead);
    }
    if (groupsPerCall < 1) {
      throw new IllegalArgumentException("groupsPerCall must be at least 1, got " + groupsPerCall);
    }
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight must be at least 1, got " + maxInFlight);
    }
    if (restartWaitMs < 1) {
      throw new IllegalArgumentException("restartWaitMs must be at least 1, got " + restartWaitMs);
    }
  }
}
