package dev.ravel.workers.task;

import java.io.Serializable;
import java.util.Objects;

/**
 * One task instance: the prompt given to the policy, the reference answer its completion is checked against,
 * and (for a row of your data) the row's other fields as a JSON object, passed to your reward function.
 *
 * @param metadataJson the row's other fields as a JSON object ({@code {}} for the built-in task)
 */
public record Problem(String prompt, String answer, String metadataJson) implements Serializable {
  /** A problem without metadata. */
  public Problem(String prompt, String answer) {
    this(prompt, answer, "{}");
  }

  public Problem {
    Objects.requireNonNull(prompt, "prompt");
    Objects.requireNonNull(answer, "answer");
    Objects.requireNonNull(metadataJson, "metadataJson");
    if (prompt.isEmpty()) {
      throw new IllegalArgumentException("prompt must not be empty");
    }
  }
}
