package dev.ravel.workers.engine;

import java.io.Serializable;

/**
 * Completion tokens {@code [start, end)} were sampled with the weights of version {@code version} (vLLM's
 * {@code WeightVersionSpan}: a request that spans a weight update has one span per version it saw).
 *
 * @param version the weight version
 * @param start the first completion-token index sampled with it
 * @param end one past the last
 */
public record VersionSpan(long version, int start, int end) implements Serializable {
  public VersionSpan {
    if (start < 0 || end <= start) {
      throw new IllegalArgumentException("a version span covers at least one token: [" + start + ", " + end + ")");
    }
  }
}
