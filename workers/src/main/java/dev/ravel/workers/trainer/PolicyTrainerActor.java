package dev.ravel.workers.trainer;

import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.grpo.GrpoTrainer;
import dev.ravel.workers.grpo.LogProbs;
import dev.ravel.workers.grpo.TrainStep;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.ModelWeights;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * {@link PolicyTrainer} over a {@link GrpoTrainer}. The log-probs computed by {@link #logprobs} are reused
 * by the {@link #train} call that follows on the same batch, so the reference pass runs once per step.
 */
public final class PolicyTrainerActor extends RavelActor implements PolicyTrainer {
  private final GrpoTrainer trainer;
  private List<String> lastBatch = List.of();
  private LogProbs lastLogProbs;

  public PolicyTrainerActor(Payload<TrainerSpec> specPayload) {
    TrainerSpec spec = specPayload.value();
    // the run's start-up trace: the trainer's model and state, under the trainers' rl.run.actors (docs/design.md)
    try (var startup = startupSpan(dev.ravel.telemetry.spans.SpanNames.TRAINER_LOAD_MODEL)) {
      this.trainer = new GrpoTrainer(spec.initial(), spec.grpo());
      if (spec.resume() != null) {
        trainer.restore(spec.resume());
      }
    }
  }

  @Override
  public synchronized LogProbSummary logprobs(List<Trajectory> batch) {
    LogProbs lp = trainer.logprobs(batch);
    lastBatch = ids(batch);
    lastLogProbs = lp;
    double policy = 0;
    double reference = 0;
    long tokens = 0;
    for (int i = 0; i < lp.size(); i++) {
      for (float x : lp.policy(i)) {
        policy += x;
        tokens++;
      }
      for (float x : lp.reference(i)) {
        reference += x;
      }
    }
    long n = Math.max(1, tokens);
    return new LogProbSummary(policy / n, reference / n, lp.meanKl(trainer.config().klEstimator()), tokens);
  }

  @Override
  public synchronized TrainOutcome train(List<Trajectory> batch) {
    boolean reuse = lastLogProbs != null && lastBatch.equals(ids(batch))
        && lastLogProbs.policyVersion() == trainer.weights().version();
    TrainStep step = reuse ? trainer.train(batch, lastLogProbs) : trainer.train(batch);
    lastLogProbs = null;
    return new TrainOutcome(step.weights(), step.metrics());
  }

  @Override
  public ModelWeights weights() {
    return trainer.weights();
  }

  /** Not the Java trainer's: its TinyLm weights reach the workers through the object store ({@link #weights}). */
  @Override
  public String publishFile(String dir) {
    throw new UnsupportedOperationException("publishFile: the Java trainer's weights go through the object store;"
        + " weights files are the Python trainer's (trainer.runtime: python)");
  }

  /** Writes the weights and the optimizer state ({@link TrainerStateFile}), so that a run can resume. */
  @Override
  public String checkpoint(String dir) {
    return TrainerStateFile.write(Path.of(dir), trainer.state()).toString();
  }

  /** A Java trainer trains alone: it has no group to meet in. */
  @Override
  public String rendezvous() {
    throw new UnsupportedOperationException("rendezvous: the Java trainer trains alone (trainer.workers: 1); a"
        + " trainer group is Ravel's Python trainer's");
  }

  /** A Java trainer trains alone: a group of one. */
  @Override
  public int joinGroup(String address) {
    return 1;
  }

  private static List<String> ids(List<Trajectory> batch) {
    return batch.stream().map(Trajectory::requestId).toList();
  }
}
