package dev.ravel.workers.generation;

import dev.ravel.workers.engine.GenerationRequest;
import dev.ravel.workers.engine.GenerationResult;
import dev.ravel.workers.engine.SamplingParams;
import dev.ravel.workers.grpo.Trajectory;
import dev.ravel.workers.model.Tokenizer;
import dev.ravel.workers.task.ArithmeticTask;
import dev.ravel.workers.task.Problem;
import dev.ravel.workers.task.PromptSource;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * What a GRPO step generates: its prompts and their G requests each, prompt-major. The same step of the
 * same run gives the same batch wherever it is planned (the sync loop in the driver, the async collector),
 * since both draw it from seeds derived here, and only here, from the run's seed and the step.
 *
 * @param step the training step the batch is for
 * @param groupSize completions per prompt (G)
 */
public record StepBatch(long step, int groupSize, List<Problem> problems, List<GenerationRequest> requests) {
  private static final long SEED_STREAM = 7_919L;

  public StepBatch {
    problems = List.copyOf(problems);
    requests = List.copyOf(requests);
    if (requests.size() != problems.size() * groupSize) {
      throw new IllegalArgumentException("requests: expected " + problems.size() * groupSize + " ("
          + problems.size() + " prompts x " + groupSize + "), got " + requests.size());
    }
  }

  /**
   * Step {@code step}'s batch: {@code prompts} problems drawn from {@code task}, each asked {@code groupSize}
   * times with its own sampling seed (requests {@code s<step>-p<prompt>-<sample>}, see {@link GroupRequests}).
   */
  public static StepBatch plan(ArithmeticTask task, Tokenizer tokenizer, int prompts, int groupSize,
      SamplingParams sampling, long runSeed, long step) {
    return plan(PromptSource.of(task, tokenizer), prompts, groupSize, sampling, runSeed, step);
  }

  /** Step {@code step}'s batch of {@code source}'s prompts, each asked {@code groupSize} times (as above). */
  public static StepBatch plan(PromptSource source, int prompts, int groupSize, SamplingParams sampling, long runSeed,
      long step) {
    List<Problem> problems = source.sample(prompts, runSeed, step);
    List<GenerationRequest> requests = GroupRequests.of(problems, source::encode, groupSize, sampling, step,
        new SplittableRandom(runSeed * SEED_STREAM + step));
    return new StepBatch(step, groupSize, problems, requests);
  }

  /** The problem request {@code i} asks about. */
  public Problem problemOf(int request) {
    return problems.get(request / groupSize);
  }

  /** The problem of each request, in request order (what the reward environment scores against). */
  public List<Problem> problemPerRequest() {
    List<Problem> out = new ArrayList<>(requests.size());
    for (int i = 0; i < requests.size(); i++) {
      out.add(problemOf(i));
    }
    return out;
  }

  /**
   * The trajectories of this batch's results (in request order) with their rewards.
   *
   * @throws IllegalStateException when a generation failed or was aborted (the engine's reason named)
   */
  public List<Trajectory> trajectories(List<GenerationResult> results, double[] rewards) {
    return trajectories(0, problems.size(), results, rewards);
  }

  /**
   * The trajectories of groups {@code [fromGroup, toGroup)} from their results (in request order) with their
   * rewards: what one chunked generate call returns.
   *
   * @throws IllegalStateException when a result is for another request than its place says
   */
  public List<Trajectory> trajectories(int fromGroup, int toGroup, List<GenerationResult> results, double[] rewards) {
    List<GenerationRequest> asked = requests(fromGroup, toGroup);
    if (results.size() != asked.size() || rewards.length != asked.size()) {
      throw new IllegalArgumentException("expected " + asked.size() + " results and rewards, got "
          + results.size() + " and " + rewards.length);
    }
    List<Trajectory> out = new ArrayList<>(results.size());
    for (int i = 0; i < results.size(); i++) {
      GenerationResult r = results.get(i);
      if (!r.requestId().equals(asked.get(i).requestId())) {
        throw new IllegalStateException("result " + i + " is for request " + r.requestId() + ", expected "
            + asked.get(i).requestId());
      }
      out.add(Trajectory.of(r, rewards[i], i % groupSize));
    }
    return out;
  }

  /**
   * The trajectories of groups {@code [fromGroup, toGroup)} (all groups: 0 and {@code problems().size()}) with
   * their scores, each trajectory keeping what the reward function saw and gave ({@link Trajectory#scoring()}).
   */
  public List<Trajectory> trajectories(int fromGroup, int toGroup, List<GenerationResult> results,
      dev.ravel.workers.reward.RewardScores scores) {
    List<Trajectory> plain = trajectories(fromGroup, toGroup, results, scores.rewards());
    List<Trajectory> out = new ArrayList<>(plain.size());
    for (int i = 0; i < plain.size(); i++) {
      out.add(plain.get(i).withScoring(scores.scoring(i, problemOf(fromGroup * groupSize + i))));
    }
    return out;
  }

  /** The requests of groups {@code [fromGroup, toGroup)}, prompt-major. */
  public List<GenerationRequest> requests(int fromGroup, int toGroup) {
    return List.copyOf(requests.subList(fromGroup * groupSize, toGroup * groupSize)); // sent to actors: serializable
  }

  /** The problem of each request of groups {@code [fromGroup, toGroup)}. */
  public List<Problem> problemPerRequest(int fromGroup, int toGroup) {
    List<Problem> out = new ArrayList<>((toGroup - fromGroup) * groupSize);
    for (int i = fromGroup * groupSize; i < toGroup * groupSize; i++) {
      out.add(problemOf(i));
    }
    return out;
  }
}
