package dev.ravel.driver.trackers;

import dev.ravel.telemetry.runs.StepRecord;
import dev.ravel.telemetry.spans.StepMetricNames;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The numbers of a step as the trackers get them: every numeric field of its {@link StepRecord}, each under one
 * stable name. Where the step's OpenTelemetry metric exists the name is its {@link StepMetricNames} name; a metric
 * that OpenTelemetry splits by an attribute (a phase, a clip side, a reward component, a trajectory state) is one
 * series per value here, the value appended after a dot ({@code rl.step.phase.duration.generation}). The README
 * ("Experiment trackers") lists them all.
 */
final class TrackerMetrics {
  private TrackerMetrics() {}

  /** Tokens generated for the step. */
  static final String TOKENS = "rl.step.tokens";
  /** The weight version the step trained into. */
  static final String WEIGHT_VERSION = "rl.step.weight_version";
  /** Actor calls issued for the step. */
  static final String RAY_CALLS = "rl.step.ray_calls";
  /** The longest completion of the step, in tokens. */
  static final String RESPONSE_LENGTH_MAX = "rl.completion.length.max";
  /** Completions cut at {@code grpo.max_new_tokens}. */
  static final String COMPLETIONS_CLIPPED = "rl.completion.clipped";
  /** Completions scored on the eval set. */
  static final String EVAL_COMPLETIONS = "rl.eval.completions";
  /** Sequences in the update (after {@code grpo.filter_zero_advantage}). */
  static final String KEPT_SEQUENCES = "rl.step.kept_sequences";
  /** Optimizer steps the update took. */
  static final String EPOCHS = "rl.step.epochs";
  /** The mean policy lag of the step's trajectories, in weight versions. */
  static final String POLICY_LAG_MEAN = StepMetricNames.POLICY_LAG + ".mean";
  /** The largest policy lag of the step's trajectories. */
  static final String POLICY_LAG_MAX = StepMetricNames.POLICY_LAG + ".max";
  /** Requests the generation engines finished over the step. */
  static final String ENGINE_REQUESTS = "rl.step.engine.requests";
  /** Mean seconds from a request's arrival to its first scheduling, over the step's scheduled requests. */
  static final String ENGINE_QUEUE_TIME = "rl.step.engine.queue_time.mean";
  /** Evictions from the engines' running batches over the step. */
  static final String ENGINE_PREEMPTIONS = "rl.step.engine.preemptions";
  /** Requests running over the step, time-weighted mean, summed over the engines. */
  static final String ENGINE_RUNNING = "rl.step.engine.running.mean";
  /** Requests waiting over the step, time-weighted mean, summed over the engines. */
  static final String ENGINE_WAITING = "rl.step.engine.waiting.mean";
  /** Share of the KV budget held over the step, time-weighted mean, averaged over the engines. */
  static final String ENGINE_KV_USAGE = "rl.step.engine.kv_cache.usage.mean";

  /**
   * The step's numbers by name, in a fixed order; fields a step did not record (no eval, a record written before
   * they were) are absent.
   */
  static Map<String, Double> of(StepRecord m) {
    Map<String, Double> out = new LinkedHashMap<>();
    out.put(StepMetricNames.REWARD_MEAN, m.rewardMean());
    out.put(StepMetricNames.REWARD_STD, m.rewardStd());
    out.put(StepMetricNames.KL, m.kl());
    out.put(StepMetricNames.LOSS, m.loss());
    out.put(StepMetricNames.CLIP_FRACTION, m.clipFraction());
    out.put(TOKENS, (double) m.tokens());
    out.put(StepMetricNames.TOKENS_PER_SECOND, m.tokensPerSecond());
    out.put(StepMetricNames.DURATION, m.stepSeconds());
    m.phases().forEach((phase, seconds) -> out.put(StepMetricNames.PHASE_DURATION + "." + phase, seconds));
    out.put(WEIGHT_VERSION, (double) m.weightVersion());
    out.put(StepMetricNames.TRAJECTORIES + ".used", (double) m.trajectories());
    out.put(StepMetricNames.TRAJECTORIES + ".dropped", (double) m.droppedForAge());
    out.put(RAY_CALLS, (double) m.rayCalls());
    StepRecord.Completions c = m.completions();
    if (c != null) {
      out.put(StepMetricNames.RESPONSE_LENGTH_MEAN, c.meanTokens());
      out.put(RESPONSE_LENGTH_MAX, (double) c.maxTokens());
      out.put(COMPLETIONS_CLIPPED, (double) c.clipped());
      out.put(StepMetricNames.COMPLETIONS_CLIPPED_SHARE, m.trajectories() == 0 ? 0 : (double) c.clipped() / m.trajectories());
    }
    StepRecord.Eval e = m.eval();
    if (e != null) {
      out.put(StepMetricNames.EVAL_REWARD, e.reward());
      out.put(StepMetricNames.EVAL_ACCURACY, e.accuracy());
      out.put(EVAL_COMPLETIONS, (double) e.completions());
    }
    StepRecord.Update u = m.update();
    if (u != null) {
      out.put(StepMetricNames.GRAD_NORM, u.gradNorm());
      out.put(StepMetricNames.LEARNING_RATE, u.learningRate());
      out.put(StepMetricNames.ENTROPY, u.entropy());
      out.put(StepMetricNames.CLIP_SIDE_FRACTION + ".low", u.clipLow());
      out.put(StepMetricNames.CLIP_SIDE_FRACTION + ".high", u.clipHigh());
      out.put(StepMetricNames.CLIP_SIDE_FRACTION + ".dual", u.clipDual());
      out.put(StepMetricNames.RATIO_MEAN, u.ratioMean());
      out.put(StepMetricNames.RATIO_MAX, u.ratioMax());
      out.put(StepMetricNames.TIS_TRUNCATED, u.tisTruncated());
      out.put(StepMetricNames.ZERO_ADVANTAGE_GROUPS, (double) u.zeroAdvantageGroups());
      out.put(KEPT_SEQUENCES, (double) u.keptSequences());
      out.put(EPOCHS, (double) u.epochs());
    }
    StepRecord.Rewards r = m.rewards();
    if (r != null) {
      r.components().forEach((name, mean) -> out.put(metricKey(StepMetricNames.REWARD_COMPONENT, name, out), mean));
      out.put(StepMetricNames.REWARD_FAILED, (double) r.failed());
    }
    StepRecord.Lag lag = m.lag();
    if (lag != null) {
      out.put(POLICY_LAG_MEAN, lag.meanAge());
      out.put(POLICY_LAG_MAX, (double) lag.maxAge());
      out.put(StepMetricNames.BUFFER_DEPTH, (double) lag.bufferDepth());
      out.put(StepMetricNames.COLLECTOR_IN_FLIGHT, (double) lag.inFlight());
    }
    StepRecord.Engine engine = m.engine();
    if (engine != null) { // a value an engine does not measure (null) is left out
      out.put(ENGINE_REQUESTS, (double) engine.requests());
      putIfKnown(out, ENGINE_QUEUE_TIME, engine.queueTimeMean());
      out.put(ENGINE_PREEMPTIONS, (double) engine.preemptions());
      putIfKnown(out, ENGINE_RUNNING, engine.runningMean());
      putIfKnown(out, ENGINE_WAITING, engine.waitingMean());
      putIfKnown(out, ENGINE_KV_USAGE, engine.kvUsageMean());
    }
    return out;
  }

  /** The longest metric name MLflow takes. */
  static final int MAX_NAME = 250;

  /**
   * {@code prefix.name} for a name the user chose (a reward component), in the characters every tracker takes
   * (MLflow refuses a whole batch for one name with others: letters, digits, {@code _ - . : /} and space): each
   * other character becomes {@code _}, the name is cut to {@value #MAX_NAME} characters, and a name that two
   * components would share gets {@code _2}, {@code _3}, ... so that none is lost.
   */
  static String metricKey(String prefix, String name, Map<String, Double> taken) {
    String clean = (prefix + "." + name).replaceAll("[^A-Za-z0-9_\\-. :/]", "_");
    clean = clean.length() > MAX_NAME ? clean.substring(0, MAX_NAME) : clean;
    String key = clean;
    for (int n = 2; taken.containsKey(key); n++) {
      String suffix = "_" + n;
      key = (clean.length() + suffix.length() > MAX_NAME ? clean.substring(0, MAX_NAME - suffix.length()) : clean)
          + suffix;
    }
    return key;
  }

  private static void putIfKnown(Map<String, Double> out, String name, Double value) {
    if (value != null) {
      out.put(name, value);
    }
  }
}
