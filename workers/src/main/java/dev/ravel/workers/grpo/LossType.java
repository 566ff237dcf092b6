package dev.ravel.workers.grpo;

/**
 * How a batch's per-token objectives are aggregated into the loss ({@code grpo.loss_type}). With {@code l_it}
 * the objective of token {@code t} of sequence {@code i}, {@code B} sequences and {@code T} tokens in all:
 * <ul>
 *   <li>{@link #GRPO}: {@code 1/B sum_i 1/|o_i| sum_t l_it}, the token mean of each sequence, then the mean of
 *       sequences (Shao et al. 2024, DeepSeekMath): every completion weighs the same whatever its length.
 *   <li>{@link #BNPO}: {@code sum_it l_it / T_mb} per micro-batch, averaged over the micro-batches (TRL's
 *       {@code bnpo}): a token mean over the local batch, so it equals {@link #DAPO} with one micro-batch.
 *   <li>{@link #DR_GRPO}: {@code sum_it l_it / (B * max_new_tokens)} (Liu et al. 2025, "Understanding R1-Zero-Like
 *       Training", Dr. GRPO): a constant normaliser, no length bias.
 *   <li>{@link #DAPO}: {@code sum_it l_it / T} over the whole step's batch whatever the micro-batching (Yu et al.
 *       2025, DAPO, token-level policy gradient loss).
 * </ul>
 */
public enum LossType {
  GRPO("grpo"),
  BNPO("bnpo"),
  DR_GRPO("dr_grpo"),
  DAPO("dapo");

  private final String configName;

  LossType(String configName) {
    this.configName = configName;
  }

  /** The name in run configs and on the wire to Python workers. */
  public String configName() {
    return configName;
  }

  /** The type named {@code name}; an unknown name is an {@link IllegalArgumentException} listing the valid ones. */
  public static LossType parse(String name) {
    return Names.parse(LossType.class, name, LossType::configName);
  }
}
