package dev.ravel.driver.grpo;

import dev.ravel.telemetry.spans.Phase;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.grpo.Advantages;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.trainer.PolicyTrainer;
import dev.ravel.workers.trainer.TrainOutcome;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The learning half of a step, the same in both loops: policy and reference log-probs, group-relative
 * advantages, the clipped policy update, and a checkpoint when one is due. With {@code grpo.kl_beta} 0 the
 * loss has no KL term, so there is no reference pass: the log-probs phase is left out (as TRL does) and the
 * step's KL reads 0.
 */
final class TrainPhase {

  private final RavelActorHandle<PolicyTrainer> trainer;
  private final GrpoSettings settings;
  private final Path runDir;

  /**
   * A trainer that returns its weights with each update (Java) is checkpointed by the driver; one that keeps
   * them (Python) writes its own checkpoints, into the same folder.
   */
  TrainPhase(RavelActorHandle<PolicyTrainer> trainer, GrpoSettings settings, Path runDir) {
    this.trainer = trainer;
    this.settings = settings;
    this.runDir = runDir;
  }

  /** Actor calls one {@link #train} makes: log-probs (unless {@code kl_beta} is 0) and the update. */
  int rayCalls() {
    return referencePass() ? 2 : 1;
  }

  private boolean referencePass() {
    return settings.grpo().klBeta() != 0;
  }

  /** What a step's update gave: the new weights (or their version) and the numbers the step reports. */
  record Trained(TrainOutcome outcome, double rewardMean, double rewardStd, long tokens, int trajectories) {}

  /** Trains step {@code step} on {@code batch}; {@code stepSpan} gets the count of flat groups. */
  Trained train(PhaseClock clock, ScopedSpan stepSpan, int step, List<Trajectory> batch) {
    if (referencePass()) {
      clock.time(Phase.LOGPROBS, () -> trainer.call(PolicyTrainer::logprobs, batch).get());
    }
    double[] rewards = batch.stream().mapToDouble(Trajectory::reward).toArray();
    clock.time(Phase.ADVANTAGE, () -> {
      // the trainer applies the same advantages; here they tell how many groups carry no signal
      long flat = flatGroups(Advantages.groupRelative(rewards, settings.groupSize(), settings.grpo().advantageEps()),
          settings.groupSize());
      stepSpan.set(RavelAttributes.FLAT_GROUPS, flat);
      return flat;
    });
    TrainOutcome out = clock.time(Phase.TRAINING, () -> trainer.call(PolicyTrainer::train, batch).get());
    if (settings.checkpointAfter(step)) {
      clock.time(Phase.CHECKPOINTING, () -> out.weights() != null ? Checkpoints.save(runDir, out.weights())
          : Path.of(trainer.call(PolicyTrainer::checkpoint, Checkpoints.folder(runDir).toString()).get()));
    }
    long tokens = batch.stream().mapToLong(Trajectory::completionLength).sum();
    double mean = Arrays.stream(rewards).average().orElse(0);
    double var = Arrays.stream(rewards).map(r -> (r - mean) * (r - mean)).average().orElse(0);
    return new Trained(out, mean, Math.sqrt(var), tokens, batch.size());
  }

  /** Groups of {@code groupSize} consecutive advantages that are all zero (equal rewards: no learning signal). */
  static long flatGroups(double[] advantages, int groupSize) {
    long flat = 0;
    for (int g = 0; g + groupSize <= advantages.length; g += groupSize) {
      boolean zero = true;
      for (int i = g; i < g + groupSize; i++) {
        zero &= advantages[i] == 0.0;
      }
      flat += zero ? 1 : 0;
    }
    return flat;
  }
}
