package dev.ravel.workers.reward;

import dev.ravel.workers.grpo.Scoring;
import dev.ravel.workers.task.Problem;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a reward environment gave for a batch of completions: one reward each, the completions as the reward
 * function read them (decoded), each named component of the reward (a function that returns a mapping of
 * components; their sum is the reward) and how many completions were scored 0 because the function raised
 * ({@code reward.on_error: zero}; all of a failed call's completions).
 *
 * @param rewards one reward per completion, finite
 * @param texts the decoded completions, one per completion
 * @param components each component's values, one per completion, in the function's order
 * @param failed completions scored 0 because the function raised (0 or all of them)
 */
public record RewardScores(double[] rewards, List<String> texts, Map<String, double[]> components, int failed)
    implements Serializable {
  /** Checks that every list has one entry per completion; copies them. */
  public RewardScores {
    Objects.requireNonNull(rewards, "rewards");
    texts = List.copyOf(texts);
    if (texts.size() != rewards.length) {
      throw new IllegalArgumentException(texts.size() + " texts for " + rewards.length + " rewards");
    }
    for (int i = 0; i < rewards.length; i++) {
      if (!Double.isFinite(rewards[i])) {
        throw new IllegalArgumentException("reward " + i + " is " + rewards[i] + ", not a finite number");
      }
    }
    Map<String, double[]> c = new LinkedHashMap<>();
    for (Map.Entry<String, double[]> e : components.entrySet()) {
      if (e.getValue().length != rewards.length) {
        throw new IllegalArgumentException("component '" + e.getKey() + "' has " + e.getValue().length
            + " values for " + rewards.length + " rewards");
      }
      c.put(e.getKey(), e.getValue().clone());
    }
    components = java.util.Collections.unmodifiableMap(c);
    if (failed < 0 || failed > rewards.length) {
      throw new IllegalArgumentException("failed must be 0.." + rewards.length + ", got " + failed);
    }
    rewards = rewards.clone();
  }

  /** Scores without components or failures. */
  public static RewardScores of(double[] rewards, List<String> texts) {
    return new RewardScores(rewards, texts, Map.of(), 0);
  }

  /** A copy of the rewards. */
  @Override
  public double[] rewards() {
    return rewards.clone();
  }

  /** The number of completions scored. */
  public int size() {
    return rewards.length;
  }

  /** The scores of completions {@code from} (inclusive) to {@code to} (exclusive), to join with others. */
  public RewardScores slice(int from, int to) {
    Map<String, double[]> c = new LinkedHashMap<>();
    components.forEach((k, v) -> c.put(k, Arrays.copyOfRange(v, from, to)));
    return new RewardScores(Arrays.copyOfRange(rewards, from, to), texts.subList(from, to), c,
        failed == 0 ? 0 : to - from);
  }

  /**
   * The scores of several calls in order, as one.
   *
   * @throws IllegalArgumentException when the parts name different components (every call of one function
   *     returns the same ones)
   */
  public static RewardScores concat(List<RewardScores> parts) {
    if (parts.size() == 1) {
      return parts.get(0);
    }
    int n = parts.stream().mapToInt(RewardScores::size).sum();
    double[] rewards = new double[n];
    List<String> texts = new ArrayList<>(n);
    Map<String, double[]> components = new LinkedHashMap<>();
    int failed = 0;
    int at = 0;
    for (RewardScores p : parts) {
      if (at > 0 && !p.components.keySet().equals(components.keySet())) {
        throw new IllegalArgumentException("the reward function returned components " + p.components.keySet()
            + " for one batch and " + components.keySet() + " for another");
      }
      for (Map.Entry<String, double[]> e : p.components.entrySet()) {
        double[] all = components.computeIfAbsent(e.getKey(), k -> new double[n]);
        System.arraycopy(e.getValue(), 0, all, at, p.size());
      }
      System.arraycopy(p.rewards, 0, rewards, at, p.size());
      texts.addAll(p.texts);
      failed += p.failed;
      at += p.size();
    }
    return new RewardScores(rewards, texts, components, failed);
  }

  /** What the function saw and gave for completion {@code i} of {@code problem}. */
  public Scoring scoring(int i, Problem problem) {
    Map<String, Double> c = new LinkedHashMap<>();
    components.forEach((k, v) -> c.put(k, v[i]));
    return new Scoring(problem.prompt(), texts.get(i), problem.answer(), c, failed > 0);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof RewardScores s) || !Arrays.equals(s.rewards, rewards) || !s.texts.equals(texts)
        || s.failed != failed || !s.components.keySet().equals(components.keySet())) {
      return false;
    }
    return components.entrySet().stream().allMatch(e -> Arrays.equals(e.getValue(), s.components.get(e.getKey())));
  }

  @Override
  public int hashCode() {
    return Objects.hash(Arrays.hashCode(rewards), texts, components.keySet(), failed);
  }

  @Override
  public String toString() {
    return "RewardScores{rewards=" + Arrays.toString(rewards) + ", components=" + components.keySet() + ", failed="
        + failed + "}";
  }
}
