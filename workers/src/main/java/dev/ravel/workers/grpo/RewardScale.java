package dev.ravel.workers.grpo;

/**
 * What a reward's distance to its group mean is divided by ({@code grpo.scale_rewards}): {@link #GROUP} the
 * group's standard deviation (GRPO), {@link #BATCH} the whole batch's (TRL's {@code scale_rewards: batch}),
 * {@link #NONE} nothing (Dr. GRPO: no question-level difficulty bias). {@code grpo.advantage_eps} is added to
 * the standard deviation first.
 */
public enum RewardScale {
  GROUP("group"),
  BATCH("batch"),
  NONE("none");

  private final String configName;

  RewardScale(String configName) {
    this.configName = configName;
  }

  /** The name in run configs and on the wire to Python workers. */
  public String configName() {
    return configName;
  }

  /** The scale named {@code name}; an unknown name is an {@link IllegalArgumentException} listing the valid ones. */
  public static RewardScale parse(String name) {
    return Names.parse(RewardScale.class, name, RewardScale::configName);
  }
}
