package dev.ravel.telemetry.view;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Phase keys of a step's direct children, their canonical order, short labels and goodput classes. */
final class Phases {
  private Phases() {}

  static final String DATA = "data_processing";
  static final String REFIT = "refit";
  static final String GENERATION = "generation";
  static final String REWARD = "reward_calculation";
  static final String LOGPROBS = "policy_and_reference_logprobs";
  static final String ADVANTAGE = "advantage_calculation";
  static final String TRAINING = "policy_training";
  static final String CHECKPOINT = "checkpointing";
  static final String IDLE_STARVATION = "idle.buffer_starvation";
  static final String IDLE_BUBBLE = "idle.refit_bubble";

  /** Pipeline order; keys not listed sort after these, alphabetically. */
  static final List<String> ORDER = List.of(DATA, REFIT, GENERATION, REWARD, LOGPROBS, ADVANTAGE, TRAINING,
      CHECKPOINT, IDLE_STARVATION, IDLE_BUBBLE);

  /** Phases whose time counts as productive in {@link Goodput}. */
  static final Set<String> PRODUCTIVE = Set.of(GENERATION, REWARD, LOGPROBS, ADVANTAGE, TRAINING);

  private static final Map<String, String> SHORT = Map.of(DATA, "data", REFIT, "refit", GENERATION, "gen",
      REWARD, "reward", LOGPROBS, "logprobs", ADVANTAGE, "adv", TRAINING, "train", CHECKPOINT, "ckpt",
      IDLE_STARVATION, "starved", IDLE_BUBBLE, "bubble");

  /** {@code rl.grpo.X} gives {@code X}, {@code rl.idle.X} gives {@code idle.X}, any other name stays as it is. */
  static String key(String spanName) {
    if (spanName.startsWith("rl.grpo.")) {
      return spanName.substring("rl.grpo.".length());
    }
    if (spanName.startsWith("rl.idle.")) {
      return spanName.substring("rl.".length());
    }
    return spanName;
  }

  /** Whether a span name is an idle span ({@code rl.idle.*}). */
  static boolean isIdle(String spanName) {
    return spanName.startsWith("rl.idle.");
  }

  /** A short label for a phase key, for one-line summaries. */
  static String label(String key) {
    return SHORT.getOrDefault(key, key);
  }

  static final Comparator<String> KEY_ORDER = Comparator.<String>comparingInt(k -> {
    int i = ORDER.indexOf(k);
    return i < 0 ? ORDER.size() : i;
  }).thenComparing(Comparator.naturalOrder());

  static List<String> sorted(Iterable<String> keys) {
    List<String> out = new ArrayList<>();
    keys.forEach(out::add);
    out.sort(KEY_ORDER);
    return out;
  }
}
