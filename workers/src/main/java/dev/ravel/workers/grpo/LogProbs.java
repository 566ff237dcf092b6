package dev.ravel.workers.grpo;

import java.io.Serializable;
import java.util.Objects;

/**
 * Per-token log-probs of a batch's completions under the current policy and under the frozen reference
 * policy, at the training temperature: entry {@code [i][t]} belongs to completion token {@code t} of
 * trajectory {@code i}. Immutable (accessors return copies).
 */
public final class LogProbs implements Serializable {
  private static final long serialVersionUID = 1L;

  private final long policyVersion;
  private final long referenceVersion;
  private final float[][] policy;
  private final float[][] reference;

  LogProbs(long policyVersion, long referenceVersion, float[][] policy, float[][] reference) {
    this.policyVersion = policyVersion;
    this.referenceVersion = referenceVersion;
    this.policy = Objects.requireNonNull(policy, "policy");
    this.reference = Objects.requireNonNull(reference, "reference");
    if (policy.length != reference.length) {
      throw new IllegalArgumentException("reference: " + reference.length + " sequences, policy has " + policy.length);
    }
  }

  /** Version of the policy weights the policy log-probs were computed with. */
  public long policyVersion() {
    return policyVersion;
  }

  /** Version of the reference weights. */
  public long referenceVersion() {
    return referenceVersion;
  }

  /** Number of trajectories. */
  public int size() {
    return policy.length;
  }

  /** Policy log-probs of trajectory {@code i}'s completion tokens (a copy). */
  public float[] policy(int i) {
    return policy[i].clone();
  }

  /** Reference log-probs of trajectory {@code i}'s completion tokens (a copy). */
  public float[] reference(int i) {
    return reference[i].clone();
  }

  float referenceAt(int i, int t) {
    return reference[i][t];
  }

  int length(int i) {
    return reference[i].length;
  }

  /** {@link #meanKl(KlEstimator)} with the k3 estimator. */
  public double meanKl() {
    return meanKl(KlEstimator.K3);
  }

  /**
   * The {@code estimator}'s estimate of KL(policy || reference), averaged per token within a sequence and then
   * over sequences (as the step's KL is reported).
   */
  public double meanKl(KlEstimator estimator) {
    if (policy.length == 0) {
      return 0;
    }
    double total = 0;
    for (int i = 0; i < policy.length; i++) {
      double seq = 0;
      for (int t = 0; t < policy[i].length; t++) {
        seq += estimator.value(policy[i][t], reference[i][t]);
      }
      total += seq / policy[i].length;
    }
    return total / policy.length;
  }

  @Override
  public String toString() {
    return "LogProbs{sequences=" + policy.length + ", policyVersion=" + policyVersion + ", referenceVersion="
        + referenceVersion + "}";
  }
}
