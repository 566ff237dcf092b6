package dev.ravel.telemetry.spans;

import java.util.Locale;

/**
 * Where a span's time counts in a step's goodput, written on phase spans as {@link RavelAttributes#BUCKET}
 * ({@code rl.bucket}) with the values NeMo-RL's spans use, so goodput queries written for NeMo-RL read
 * Ravel's spans unchanged.
 */
public enum Bucket {
  /** Work that moves training forward: generation, reward, log-probs, advantages, the policy update. */
  PRODUCTIVE,
  /** Work that training needs but that is not learning: data processing, refit, checkpointing. */
  OVERHEAD,
  /** Waiting: for the buffer to fill, for the collector to pause while weights change. */
  IDLE,
  /** Work whose result was thrown away (generation of trajectories dropped for age). */
  WASTED;

  /** The attribute value: {@code productive}, {@code overhead}, {@code idle} or {@code wasted}. */
  public String value() {
    return name().toLowerCase(Locale.ROOT);
  }
}
