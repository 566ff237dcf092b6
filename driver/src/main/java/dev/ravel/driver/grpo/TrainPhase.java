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
import java.util.Map;

/**
 * The learning half of a step, the same in both loops: policy and reference log-probs, group-relative
 * advantages, the clipped policy update, and a checkpoint when one is due. With {@code grpo.kl_beta} 0 the
 * loss has no KL term, so there is no reference pass: the log-probs phase is left out (as TRL does) and the
 * step's KL reads 0.
 */
final class TrainPhase {

  /** Rank 0: the one that writes checkpoints (and whose weights the workers load). */
  private final RavelActorHandle<PolicyTrainer> trainer;
  /** Every trainer rank ({@code trainer.workers}), rank 0 first: each takes every update. */
  private final List<RavelActorHandle<PolicyTrainer>> ranks;
  private final GrpoSettings settings;
  private final Path runDir;
  /** The run's resolved config, recorded in each checkpoint. */
  private final Map<String, Object> config;

  /**
   * The trainer writes its own checkpoints (a Java trainer its weights and optimizer state, a Python trainer
   * its weights) into the run's checkpoint folder ({@link Checkpoints}); the driver completes each.
   */
  /** The end-of-sequence token: a completion of the full length without it was cut. */
  private final int eos;

  TrainPhase(RavelActorHandle<PolicyTrainer> trainer, GrpoSettings settings, Path runDir, Map<String, Object> config) {
    this(trainer, settings, runDir, config, dev.ravel.workers.model.CharTokenizer.arithmetic().eos());
  }

  /** As above, for a tokenizer whose end of sequence is {@code eos}. */
  TrainPhase(RavelActorHandle<PolicyTrainer> trainer, GrpoSettings settings, Path runDir, Map<String, Object> config,
      int eos) {
    this(List.of(trainer), settings, runDir, config, eos);
  }

  /** As above, for a trainer group: {@code ranks} in rank order, each taking every update on its shard. */
  TrainPhase(List<RavelActorHandle<PolicyTrainer>> ranks, GrpoSettings settings, Path runDir,
      Map<String, Object> config, int eos) {
    this.eos = eos;
    this.ranks = List.copyOf(ranks);
    this.trainer = this.ranks.get(0);
    this.settings = settings;
    this.runDir = runDir;
    this.config = Map.copyOf(config);
  }

  /**
   * Actor calls {@link #train} makes for step {@code step}: log-probs (unless {@code kl_beta} is 0), the
   * update, and the checkpoint when one is due.
   */
  int rayCalls(int step) {
    return (referencePass() ? 2 : 1) * ranks.size() + (settings.checkpointAfter(step) ? 1 : 0);
  }

  private boolean referencePass() {
    return settings.grpo().klBeta() != 0;
  }

  /**
   * What a step's update gave: the new weights (or their version) and the numbers the step reports, and the
   * completion of the step's checkpoint when one was written ({@link #completeCheckpoint}).
   */
  record Trained(TrainOutcome outcome, double rewardMean, double rewardStd, long tokens, int trajectories,
      dev.ravel.telemetry.runs.StepRecord.Completions completions, Runnable checkpointCompletion,
      List<Trajectory> batch) {
    /**
     * Marks the step's checkpoint complete (its {@code checkpoint.json}), once the step's line is in
     * {@code steps.jsonl}: a run killed in between resumes from the checkpoint before, so no step that a resumed
     * run skips lacks its line. Nothing when the step wrote no checkpoint.
     */
    void completeCheckpoint() {
      if (checkpointCompletion != null) {
        checkpointCompletion.run();
      }
    }
  }

  /**
   * Trains step {@code step} on {@code batch}; {@code stepSpan} gets the count of flat groups.
   *
   * @throws IllegalStateException naming the step when the trainer's process died (it holds the optimizer
   *     state, so it is not restarted: the run goes on from its last checkpoint with {@code --resume})
   */
  Trained train(PhaseClock clock, ScopedSpan stepSpan, int step, List<Trajectory> batch) {
    try {
      return trainOnce(clock, stepSpan, step, batch);
    } catch (RankDied d) {
      throw died(step, d.rank, d.cause);
    } catch (io.ray.api.exception.RayActorException e) {
      throw died(step, 0, e); // every call but the log-probs and the update goes to rank 0 alone
    }
  }

  /**
   * Runs step {@code step}'s refit {@code body} (it reads the trainer's weights); when it fails and a trainer rank's
   * process is dead, fails with the same line as a death in training, naming the rank: a refit's error can take
   * many forms (the trainer's own call, or a worker's fetch of weights whose owner died), a dead rank is the cause.
   * Ranks are asked one by one within {@link #PROBE_TIMEOUT_MS}; when every rank answers, {@code body}'s own error
   * is rethrown.
   */
  int refit(int step, java.util.function.IntSupplier body) {
    try {
      return body.getAsInt();
    } catch (RuntimeException e) {
      for (int r = 0; r < ranks.size(); r++) {
        try {
          ranks.get(r).call(dev.ravel.workers.actor.RavelRole::processId).get(PROBE_TIMEOUT_MS);
        } catch (io.ray.api.exception.RayActorException dead) {
          IllegalStateException died = died(step, r, dead);
          died.addSuppressed(e);
          throw died;
        } catch (RuntimeException unanswered) {
          e.addSuppressed(unanswered); // not known dead (e.g. its node is unreachable for now): the refit's own error
        }
      }
      throw e;
    }
  }

  /** How long each trainer rank is given to answer after a failed refit. */
  static final long PROBE_TIMEOUT_MS = 60_000;

  /** One line: the step, the rank when there are several, Ray's first line, and {@code --resume}. */
  private IllegalStateException died(int step, int rank, io.ray.api.exception.RayActorException e) {
    String m = String.valueOf(e.getMessage());
    return new IllegalStateException("step " + Steps.number(step) + ": the policy trainer's process died ("
        + (ranks.size() > 1 ? "rank " + rank + " of " + ranks.size() + ": " : "")
        + (m.contains("\n") ? m.substring(0, m.indexOf('\n')) : m) + "); the run can go on from its last"
        + " checkpoint with --resume", e);
  }

  private Trained trainOnce(PhaseClock clock, ScopedSpan stepSpan, int step, List<Trajectory> batch) {
    if (referencePass()) {
      clock.time(Phase.LOGPROBS, () -> onEveryRank(ranks.stream().map(r -> r.call(PolicyTrainer::logprobs, batch))
          .toList()));
    }
    double[] rewards = batch.stream().mapToDouble(Trajectory::reward).toArray();
    clock.time(Phase.ADVANTAGE, () -> {
      // the trainer applies the same advantages; here they tell how many groups carry no signal
      long flat = flatGroups(Advantages.of(rewards, settings.groupSize(), settings.grpo().scaleRewards(),
          settings.grpo().advantageEps()), settings.groupSize());
      stepSpan.set(RavelAttributes.ZERO_ADVANTAGE_GROUPS, flat);
      return flat;
    });
    TrainOutcome out = clock.time(Phase.TRAINING, () -> agreed(step, onEveryRank(
        ranks.stream().map(r -> r.call(PolicyTrainer::train, batch)).toList())));
    lastStep = step;
    lastOutcome = out;
    Runnable completion = null;
    if (settings.checkpointAfter(step)) {
      completion = clock.time(Phase.CHECKPOINTING, () -> writeCheckpoint(step, out));
      checkpointed = step;
    }
    long tokens = batch.stream().mapToLong(Trajectory::completionLength).sum();
    double mean = Arrays.stream(rewards).average().orElse(0);
    double var = Arrays.stream(rewards).map(r -> (r - mean) * (r - mean)).average().orElse(0);
    return new Trained(out, mean, Math.sqrt(var), tokens, batch.size(), completions(batch), completion, batch);
  }

  /** A trainer rank's process died under a call. */
  private static final class RankDied extends RuntimeException {
    final int rank;
    final io.ray.api.exception.RayActorException cause;

    RankDied(int rank, io.ray.api.exception.RayActorException cause) {
      super(cause);
      this.rank = rank;
      this.cause = cause;
    }
  }

  /**
   * Every rank's answer to one call, in rank order (all were sent before any is awaited). When a call failed, every
   * rank's call is awaited first, and a rank whose process died is what is reported: the ranks left fail too, in
   * their collective, but because of it.
   */
  private static <T> List<T> onEveryRank(List<dev.ravel.workers.actor.RavelRef<T>> calls) {
    List<T> out = new java.util.ArrayList<>();
    RuntimeException first = null;
    for (int r = 0; r < calls.size(); r++) {
      try {
        out.add(calls.get(r).get());
      } catch (io.ray.api.exception.RayActorException e) {
        throw new RankDied(r, e);
      } catch (RuntimeException e) {
        first = first == null ? e : first;
      }
    }
    if (first != null) {
      throw first;
    }
    return out;
  }

  /**
   * Rank 0's update, once every rank says it took the same one (the same version, loss and batch): ranks that
   * disagree hold different weights, and the run stops rather than train on.
   */
  private static TrainOutcome agreed(int step, List<TrainOutcome> outcomes) {
    TrainOutcome first = outcomes.get(0);
    for (int r = 1; r < outcomes.size(); r++) {
      TrainOutcome o = outcomes.get(r);
      if (o.version() != first.version() || o.metrics().sequences() != first.metrics().sequences()
          || Double.compare(o.metrics().loss(), first.metrics().loss()) != 0) {
        throw new IllegalStateException("step " + Steps.number(step) + ": trainer rank " + r + " took another update"
            + " than rank 0 (version " + o.version() + " against " + first.version() + ", loss " + o.metrics().loss()
            + " against " + first.metrics().loss() + "): the group's weights differ; the run stops");
      }
    }
    return first;
  }

  /** The batch's completion lengths: a completion of {@code max_new_tokens} tokens without the EOS was cut. */
  private dev.ravel.telemetry.runs.StepRecord.Completions completions(List<Trajectory> batch) {
    int max = 0;
    int clipped = 0;
    long sum = 0;
    int limit = settings.sampling().maxTokens();
    for (Trajectory t : batch) {
      int[] c = t.completion();
      sum += c.length;
      max = Math.max(max, c.length);
      if (c.length >= limit && (c.length == 0 || c[c.length - 1] != eos)) {
        clipped++;
      }
    }
    return new dev.ravel.telemetry.runs.StepRecord.Completions(batch.isEmpty() ? 0 : (double) sum / batch.size(), max,
        clipped);
  }

  /** The newest step trained in this attempt (0-based), its update, and the newest step checkpointed. */
  private int lastStep = -1;
  private TrainOutcome lastOutcome;
  private int checkpointed = -1;

  /**
   * A stopped run's checkpoint: after SIGINT or SIGTERM the run ends after the step in progress, and that step is
   * checkpointed unless it was already, so {@code --resume} goes on from it. Returns the checkpoint folder, or
   * null when no step was trained in this attempt.
   */
  Path checkpointStopped() {
    if (lastOutcome == null || checkpointed == lastStep) {
      return lastOutcome == null ? null : Checkpoints.stepFolder(runDir, lastStep + 1);
    }
    Path dir;
    try {
      dir = checkpoint(lastStep, lastOutcome);
    } catch (RankDied d) {
      throw died(lastStep, d.rank, d.cause);
    }
    checkpointed = lastStep;
    return dir;
  }

  /** The checkpoint after step {@code step}: the trainer's state file, then the folder completed. */
  private Path checkpoint(int step, TrainOutcome out) {
    writeCheckpoint(step, out).run();
    return Checkpoints.stepFolder(runDir, step + 1);
  }

  /**
   * Writes the trainer's state file of the checkpoint after step {@code step}; the result completes the folder. Every
   * rank of a group is called (an fsdp2 group gathers its AdamW state onto rank 0, which writes the file).
   */
  private Runnable writeCheckpoint(int step, TrainOutcome out) {
    Path dir = Checkpoints.stepFolder(runDir, step + 1);
    Path file = Path.of(onEveryRank(ranks.stream().map(r -> r.call(PolicyTrainer::checkpoint, dir.toString()))
        .toList()).get(0));
    Checkpoints.Meta meta = new Checkpoints.Meta(step + 1, out.version(), file.getFileName().toString(),
        out.weights() == null ? pythonDigest(file) : out.weights().sha256(), config, Checkpoints.now());
    return () -> Checkpoints.complete(runDir, dir, meta);
  }

  /** The weights' digest a Python trainer wrote beside its state file. */
  private static String pythonDigest(Path stateFile) {
    try {
      return java.nio.file.Files.readString(Resume.digestFile(stateFile)).trim();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("the trainer wrote " + stateFile + " but not its digest", e);
    }
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
