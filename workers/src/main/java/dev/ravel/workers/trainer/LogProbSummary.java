package dev.ravel.workers.trainer;

import java.io.Serializable;

/** Mean per-token log-probs of a batch under the policy and the reference, and their k3 KL estimate. */
public record LogProbSummary(double policy, double reference, double kl, long tokens) implements Serializable {}
