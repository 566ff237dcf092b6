package dev.ravel.workers.task;

import java.io.Serializable;
import java.util.Objects;

/**
 * One task instance: the prompt given to the policy and the reference answer its completion is checked
 * against.
 */
public record Problem(String prompt, String answer) implements Serializable {
  public Problem {
    Objects.requireNonNull(prompt, "prompt");
    Objects.requireNonNull(answer, "answer");
    if (prompt.isEmpty()) {
      throw new IllegalArgumentException("prompt must not be empty");
    }
  }
}
