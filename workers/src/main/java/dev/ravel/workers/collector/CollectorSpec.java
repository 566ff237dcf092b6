package dev.ravel.workers.collector;

import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.buffer.ReplayBuffer;
import dev.ravel.workers.engine.SamplingParams;
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
 */
public record CollectorSpec(List<RavelActorHandle<GenerationWorker>> workers, RavelActorHandle<RewardEnvironment> reward,
    RavelActorHandle<ReplayBuffer> buffer, int promptsPerStep, int groupSize, SamplingParams sampling, long seed,
    int lead, int maxInFlight) implements Serializable {
  public CollectorSpec {
    workers = List.copyOf(workers);
    if (workers.isEmpty()) {
      throw new IllegalArgumentException("workers: at least one generation worker");
    }
    if (lead < 1) {
      throw new IllegalArgumentException("lead must be at least 1, got " + lead);
    }
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight must be at least 1, got " + maxInFlight);
    }
  }
}
