package dev.ravel.workers.collector;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import dev.ravel.workers.actor.Untraced;
import dev.ravel.workers.fault.FaultStats;
import io.ray.api.ObjectRef;

/**
 * Async GRPO's collector: runs ahead of training, generating groups for the next steps with the newest
 * published weights and pushing them to the replay buffer. Its {@code rl.grpo.generation} span for each
 * target step nests under the driver step that published the weights, and every generate call it makes is
 * wrapped in {@code rl.vllm.generate}.
 */
@ActorRole(name = "trajectory_collector", spans = "collector")
public interface TrajectoryCollector extends RavelRole {
  /**
   * Weight version {@code version}, in the object {@code weights} (null for the initial weights), is now
   * served by the workers: generation resumes, and groups for target steps up to {@code version + lead - 1}
   * are scheduled under the caller's (the step's) context. A worker that Ray restarts is given
   * {@code weights} before it is asked again. Returns the number of target steps scheduled.
   */
  int publish(long version, ObjectRef<?> weights);

  /**
   * Stops issuing new generate calls and waits up to {@code timeoutMs} for those in flight (the refit
   * bubble). Returns the number still in flight.
   */
  int pause(long timeoutMs);

  @Untraced
  CollectorStats stats();

  /** The restarts this collector saw and the calls it issued again (generate and score). */
  @Untraced
  FaultStats faults();

  /** Stops generating; pending targets are abandoned. */
  @Untraced
  CollectorStats stop();
}
