package dev.ravel.workers.grpo;

import java.io.Serializable;
import java.util.Map;
import java.util.Objects;

/**
 * What the reward function saw of one completion and gave beside its reward: the text of the prompt, the
 * completion and the answer (for {@code samples.jsonl}), the reward's named components and whether the function
 * failed on it ({@code reward.on_error: zero}). Kept with a trajectory for the step's records.
 *
 * @param prompt the prompt as the policy saw it
 * @param completion the completion as the reward function saw it (decoded)
 * @param answer the reference answer (empty when there is none)
 * @param components the reward's named components, in the function's order (empty when it returns numbers)
 * @param failed whether the function raised and the completion was scored 0
 */
public record Scoring(String prompt, String completion, String answer, Map<String, Double> components,
    boolean failed) implements Serializable {
  /** Copies the components in order. */
  public Scoring {
    Objects.requireNonNull(prompt, "prompt");
    Objects.requireNonNull(completion, "completion");
    Objects.requireNonNull(answer, "answer");
    components = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(
        components == null ? Map.of() : components));
  }
}
