package dev.ravel.workers.grpo;

/**
 * The learning rate over a run's optimizer steps ({@code trainer.lr_scheduler}, with
 * {@code trainer.warmup_steps}), as transformers' {@code get_*_schedule_with_warmup}: with {@code k} the optimizer
 * steps taken before this one, {@code W} the warmup and {@code T} the total, the factor of the base rate is
 * {@code k / W} while {@code k < W}, then {@link #CONSTANT} 1, {@link #LINEAR} {@code (T - k) / (T - W)},
 * {@link #COSINE} {@code (1 + cos(pi (k - W) / (T - W))) / 2}, never below 0.
 */
public enum LrSchedule {
  CONSTANT("constant"),
  LINEAR("linear"),
  COSINE("cosine");

  private final String configName;

  LrSchedule(String configName) {
    this.configName = configName;
  }

  /** The name in run configs and on the wire to Python workers. */
  public String configName() {
    return configName;
  }

  /** The schedule named {@code name}; an unknown name is an {@link IllegalArgumentException} listing the valid ones. */
  public static LrSchedule parse(String name) {
    return Names.parse(LrSchedule.class, name, LrSchedule::configName);
  }

  /** The factor of the base learning rate for the optimizer step after {@code taken} steps. */
  public double factor(long taken, long warmup, long total) {
    if (taken < warmup) {
      return (double) taken / Math.max(1, warmup);
    }
    double span = Math.max(1, total - warmup);
    return switch (this) {
      case CONSTANT -> 1;
      case LINEAR -> Math.max(0, (total - taken) / span);
      case COSINE -> Math.max(0, 0.5 * (1 + Math.cos(Math.PI * Math.min(1, (taken - warmup) / span))));
    };
  }
}
