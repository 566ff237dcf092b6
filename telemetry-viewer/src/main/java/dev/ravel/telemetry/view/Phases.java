package dev.ravel.telemetry.view;

import dev.ravel.telemetry.spans.Bucket;
import dev.ravel.telemetry.spans.Phase;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The views' side of {@link Phase}: phase keys of a step's direct children, their order, short labels and
 * goodput classes, all read from the one phase model.
 */
final class Phases {
  private Phases() {}

  static final String DATA = Phase.DATA_PROCESSING.key();
  static final String REFIT = Phase.REFIT.key();
  static final String GENERATION = Phase.GENERATION.key();
  static final String REWARD = Phase.REWARD.key();
  static final String LOGPROBS = Phase.LOGPROBS.key();
  static final String ADVANTAGE = Phase.ADVANTAGE.key();
  static final String TRAINING = Phase.TRAINING.key();
  static final String CHECKPOINT = Phase.CHECKPOINTING.key();
  static final String IDLE_STARVATION = Phase.BUFFER_STARVATION.key();
  static final String IDLE_BUBBLE = Phase.REFIT_BUBBLE.key();

  /** Pipeline order (the phase model's); keys not listed sort after these, alphabetically. */
  static final List<String> ORDER = Arrays.stream(Phase.values()).map(Phase::key).toList();

  /** Phases whose time counts as productive in {@link Goodput}. */
  static final Set<String> PRODUCTIVE = Arrays.stream(Phase.values()).filter(p -> p.bucket() == Bucket.PRODUCTIVE)
      .map(Phase::key).collect(Collectors.toUnmodifiableSet());

  /** {@code rl.grpo.X} gives {@code X}, {@code rl.idle.X} gives {@code idle.X}, any other name stays as it is. */
  static String key(String spanName) {
    return Phase.keyOf(spanName);
  }

  /** Whether a span name is an idle span ({@code rl.idle.*}). */
  static boolean isIdle(String spanName) {
    return Phase.isIdle(spanName);
  }

  /** A short label for a phase key, for one-line summaries. */
  static String label(String key) {
    return Phase.ofKey(key).map(Phase::label).orElse(key);
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
