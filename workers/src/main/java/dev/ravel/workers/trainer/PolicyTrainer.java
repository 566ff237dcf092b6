package dev.ravel.workers.trainer;

import dev.ravel.workers.actor.ActorRole;
import dev.ravel.workers.actor.RavelRole;
import dev.ravel.workers.actor.Untraced;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.ModelWeights;
import java.util.List;

/**
 * The GRPO policy trainer: holds the policy, its optimizer state and the frozen reference policy. Calls run
 * in spans {@code rl.trainer.<method>}.
 */
@ActorRole(name = "policy_trainer", spans = "trainer")
public interface PolicyTrainer extends RavelRole {
  /** Per-token log-probs of the batch under the policy and the reference, summarised. */
  LogProbSummary logprobs(List<Trajectory> batch);

  /**
   * One GRPO update on the batch (group-relative advantages, clipped importance ratio against the
   * behaviour log-probs, KL to the reference); returns the new weights (version + 1) and metrics.
   */
  TrainOutcome train(List<Trajectory> batch);

  /**
   * The current weights. A Python trainer returns its weights in its own format instead
   * ({@code PythonWorkers.WEIGHTS_FORMAT}), whose object reference the driver passes on to the generation workers
   * without reading it.
   */
  @Untraced
  ModelWeights weights();

  /**
   * The current weights as one safetensors file in Hugging Face names under {@code dir}, once per version, for
   * inference servers that load files ({@code ravel-file}); returns the JSON of a
   * {@link dev.ravel.workers.generation.WeightsFileRef}. The Python trainer's: the Java trainer's weights go through
   * the object store ({@link #weights}).
   */
  String publishFile(String dir);

  /**
   * Writes the current weights under the folder {@code dir} (created if missing) atomically: a temporary file,
   * then a rename. Returns the file's path.
   */
  String checkpoint(String dir);

  /**
   * Rank 0 of a trainer group ({@code trainer.workers} above 1): the {@code host:port} where the ranks meet, on
   * its node's address. Set-up before any step, so in no step's trace.
   */
  @Untraced
  String rendezvous();

  /**
   * Joins the trainer group meeting at {@code address} ({@link #rendezvous}); returns, with the group's size, once
   * every rank has joined and holds rank 0's weights. A trainer alone returns 1 at once.
   */
  @Untraced
  int joinGroup(String address);
}
