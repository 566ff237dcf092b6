package dev.ravel.telemetry.view;

/**
 * Where a step's wall time went, as shares of the step root's duration {@code W}. Every instant of the root's
 * interval is counted once, in the first class that covers it:
 * <ol>
 *   <li><b>idle</b>: covered by an {@code rl.idle.*} span anywhere in the step's tree ({@code
 *       rl.idle.buffer_starvation}, the {@code rl.idle.refit_bubble} nested in refit, ...);</li>
 *   <li><b>productive</b>: covered by a direct child of the root that is {@code rl.grpo.generation},
 *       {@code rl.grpo.reward_calculation}, {@code rl.grpo.policy_and_reference_logprobs},
 *       {@code rl.grpo.advantage_calculation} or {@code rl.grpo.policy_training};</li>
 *   <li><b>overhead</b>: everything else: {@code rl.grpo.refit} (less its nested idle bubble),
 *       {@code rl.grpo.data_processing}, {@code rl.grpo.checkpointing}, any other direct child, and the root's
 *       own time that no child covers.</li>
 * </ol>
 * Spans are clipped to the root's interval and overlapping spans of one class count once.
 *
 * <p><b>wasted</b> is then moved out of productive: when the root carries both {@code rl.dropped_trajectories}
 * and {@code rl.num_trajectories} (the trajectories it trained on), {@code wasted = G * dropped / (dropped +
 * used)} where {@code G} is the productive time covered by {@code rl.grpo.generation} direct children; else 0.
 * (An async step has no generation phase of its own, so its wasted share is 0: that generation ran in the
 * collector, in the traces of earlier steps.)
 *
 * <p>So {@code productive + overhead + idle + wasted} is 1 (up to rounding) for a step with a positive
 * duration, and every share is 0 for a step of zero duration.
 *
 * @param productive share of generation, reward, logprobs, advantage and training time, less wasted
 * @param overhead share of refit, data processing, checkpointing, other children and unaccounted root time
 * @param idle share of time covered by {@code rl.idle.*} spans
 * @param wasted share of generation time spent on trajectories that were dropped
 */
public record Goodput(double productive, double overhead, double idle, double wasted) {
  /** All shares 0 (a step of zero duration). */
  public static final Goodput NONE = new Goodput(0, 0, 0, 0);

  private static final double TOLERANCE = 1e-9;

  /** Checks every share is in [0, 1] and that they add up to at most 1. */
  public Goodput {
    check("productive", productive);
    check("overhead", overhead);
    check("idle", idle);
    check("wasted", wasted);
    if (productive + overhead + idle + wasted > 1 + TOLERANCE) {
      throw new IllegalArgumentException("goodput shares add up to more than 1: " + productive + " + " + overhead
          + " + " + idle + " + " + wasted);
    }
  }

  private static void check(String name, double v) {
    if (!(v >= 0 && v <= 1 + TOLERANCE)) {
      throw new IllegalArgumentException(name + " share must be in [0, 1], got " + v);
    }
  }

  /** The sum of the four shares. */
  public double total() {
    return productive + overhead + idle + wasted;
  }

  /** Shares computed from nanosecond amounts of a wall time {@code wall} (all 0 when {@code wall <= 0}). */
  static Goodput ofNanos(long productive, long overhead, long idle, long wasted, long wall) {
    if (wall <= 0) {
      return NONE;
    }
    double w = wall;
    return new Goodput(productive / w, overhead / w, idle / w, wasted / w);
  }
}
