package dev.ravel.workers.buffer;

import dev.ravel.telemetry.context.SpanLink;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.task.Problem;
import java.io.Serializable;
import java.util.List;

/**
 * One prompt's group of G trajectories, as the collector hands it to the replay buffer.
 *
 * @param weightVersion the oldest weight version that produced any of its tokens
 * @param targetVersion the training step this group was generated for
 * @param generateSpans for each trajectory, the {@code rl.vllm.generate} span that produced it
 *     ({@link SpanLink#NONE} when that span was off), so the training step can link to it
 */
public record Rollout(Problem problem, List<Trajectory> trajectories, long weightVersion, long targetVersion,
    List<SpanLink> generateSpans) implements Serializable {
  public Rollout {
    trajectories = List.copyOf(trajectories);
    generateSpans = List.copyOf(generateSpans);
  }

  /** Completion tokens of the whole group. */
  public long completionTokens() {
    return trajectories.stream().mapToLong(t -> t.completion().length).sum();
  }
}
