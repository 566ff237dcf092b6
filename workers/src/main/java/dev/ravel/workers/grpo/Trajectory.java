package dev.ravel.workers.grpo;

import dev.ravel.workers.engine.GenerationResult;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;

/**
 * One sampled completion, as the rollout side hands it to the learner.
 *
 * @param requestId the generation request that produced it; the {@code groupSize} completions of one prompt
 *     may share it (informational: the learner groups trajectories by position, see {@link GrpoTrainer})
 * @param prompt the prompt tokens (non-empty)
 * @param completion the sampled tokens, EOS included when it was sampled (non-empty)
 * @param logprobs the behaviour policy's log-prob of each completion token, as
 *     {@code Sampling.logProb(logits, token, temperature)} at the sampling temperature
 * @param reward the task's reward for the decoded completion
 * @param weightVersion the version of the weights that sampled it (the behaviour policy)
 * @param groupIndex the position of this completion within its group, {@code 0 .. groupSize-1}
 * @param scoring what the reward function saw and gave beside the reward, for the step's records (null where
 *     it was not kept); the learner does not read it
 */
public record Trajectory(String requestId, int[] prompt, int[] completion, float[] logprobs, double reward,
    long weightVersion, int groupIndex, Scoring scoring) implements Serializable {

  /** A trajectory without its scoring. */
  public Trajectory(String requestId, int[] prompt, int[] completion, float[] logprobs, double reward,
      long weightVersion, int groupIndex) {
    this(requestId, prompt, completion, logprobs, reward, weightVersion, groupIndex, null);
  }

  /** Validates and copies the arrays. */
  public Trajectory {
    Objects.requireNonNull(requestId, "requestId");
    Objects.requireNonNull(prompt, "prompt");
    Objects.requireNonNull(completion, "completion");
    Objects.requireNonNull(logprobs, "logprobs");
    if (prompt.length == 0) {
      throw new IllegalArgumentException("prompt must not be empty");
    }
    if (completion.length == 0) {
      throw new IllegalArgumentException("completion must not be empty");
    }
    if (logprobs.length != completion.length) {
      throw new IllegalArgumentException(
          "logprobs: length " + logprobs.length + " differs from completion length " + completion.length);
    }
    for (int i = 0; i < logprobs.length; i++) {
      if (!(logprobs[i] <= 0)) {
        throw new IllegalArgumentException("logprobs[" + i + "] must be a log-probability (<= 0), got " + logprobs[i]);
      }
    }
    if (!Double.isFinite(reward)) {
      throw new IllegalArgumentException("reward must be finite, got " + reward);
    }
    if (weightVersion < 0) {
      throw new IllegalArgumentException("weightVersion must be >= 0, got " + weightVersion);
    }
    if (groupIndex < 0) {
      throw new IllegalArgumentException("groupIndex must be >= 0, got " + groupIndex);
    }
    prompt = prompt.clone();
    completion = completion.clone();
    logprobs = logprobs.clone();
  }

  /**
   * The trajectory of a finished generation: its request id, prompt, completion, behaviour log-probs and
   * weight version, with the reward the task gave it.
   *
   * @throws IllegalStateException when the generation failed or was aborted (the engine's reason named)
   */
  public static Trajectory of(GenerationResult result, double reward, int groupIndex) {
    GenerationResult r = result.requireSucceeded();
    // the oldest version that sampled a token: a completion that spanned a weight update is as old as its start
    return new Trajectory(r.requestId(), r.promptTokens(), r.completionTokens(), r.logprobs(), reward,
        r.oldestWeightVersion(), groupIndex);
  }

  /** This trajectory with what its reward function saw and gave. */
  public Trajectory withScoring(Scoring s) {
    return new Trajectory(requestId, prompt, completion, logprobs, reward, weightVersion, groupIndex, s);
  }

  /** A copy of the prompt tokens. */
  @Override
  public int[] prompt() {
    return prompt.clone();
  }

  /** A copy of the completion tokens. */
  @Override
  public int[] completion() {
    return completion.clone();
  }

  /** A copy of the behaviour log-probs. */
  @Override
  public float[] logprobs() {
    return logprobs.clone();
  }

  /** Number of completion tokens. */
  public int completionLength() {
    return completion.length;
  }

  /** Prompt followed by completion, the sequence the policy is evaluated on. */
  public int[] sequence() {
    int[] s = Arrays.copyOf(prompt, prompt.length + completion.length);
    System.arraycopy(completion, 0, s, prompt.length, completion.length);
    return s;
  }

  /** Behaviour log-prob of completion token {@code i}. */
  public float logprob(int i) {
    return logprobs[i];
  }

  boolean samePrompt(Trajectory other) {
    return Arrays.equals(prompt, other.prompt);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Trajectory t
        && t.requestId.equals(requestId)
        && Arrays.equals(t.prompt, prompt)
        && Arrays.equals(t.completion, completion)
        && Arrays.equals(t.logprobs, logprobs)
        && Double.compare(t.reward, reward) == 0
        && t.weightVersion == weightVersion
        && t.groupIndex == groupIndex
        && java.util.Objects.equals(t.scoring, scoring);
  }

  @Override
  public int hashCode() {
    int h = requestId.hashCode();
    h = h * 31 + Arrays.hashCode(prompt);
    h = h * 31 + Arrays.hashCode(completion);
    h = h * 31 + Arrays.hashCode(logprobs);
    h = h * 31 + Double.hashCode(reward);
    h = h * 31 + Long.hashCode(weightVersion);
    return (h * 31 + groupIndex) * 31 + java.util.Objects.hashCode(scoring);
  }

  @Override
  public String toString() {
    return "Trajectory{requestId=" + requestId + ", prompt=" + Arrays.toString(prompt) + ", completion="
        + Arrays.toString(completion) + ", logprobs=" + Arrays.toString(logprobs) + ", reward=" + reward
        + ", weightVersion=" + weightVersion + ", groupIndex=" + groupIndex + ", scoring=" + scoring + "}";
  }
}
