package dev.ravel.telemetry.runs;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;

/**
 * What one GRPO step measured: a line of the run folder's {@code steps.jsonl} (appended as the step ends, so a
 * crashed run keeps its curves) and an entry of {@code run.json}'s {@code step_metrics}. Written by
 * {@link #toJsonLine()} and read by {@link #parse(String)}; nothing else spells its fields.
 *
 * @param step the step's number, 1-based (as the progress line and the step's span number it)
 * @param mode {@code sync} or {@code async}
 * @param rewardMean the mean reward of the step's trajectories
 * @param rewardStd the population standard deviation of the step's rewards
 * @param kl the k3 KL estimate to the reference policy
 * @param loss the GRPO loss of the update
 * @param clipFraction the share of tokens whose ratio was clipped
 * @param tokens tokens generated for the step
 * @param tokensPerSecond generated tokens per second of generation
 * @param stepSeconds the step's wall time
 * @param phases wall seconds per phase, in the order they ran ({@code generation}, {@code training}, ...)
 * @param weightVersion the weight version the step trained into
 * @param trajectories trajectories trained on
 * @param droppedForAge trajectories discarded as too old while gathering this step's batch (async)
 * @param rayCalls actor calls issued for this step (by the driver, and in async mode by the collector)
 * @param traceId the step's trace
 * @param completions how long the step's completions were, and how many hit {@code grpo.max_new_tokens}
 * @param eval the eval set's scores with the weights the step served, when the step evaluated ({@code null}
 *     otherwise)
 * @param update what the policy update measured beyond the loss, KL and clip fraction ({@code null} in lines
 *     written before it was recorded)
 * @param rewards the reward function's named components and its failed calls ({@code null} in lines written
 *     before they were recorded)
 * @param lag how old the step's trajectories were and how full the async pipeline was ({@code null} in lines
 *     written before it was recorded)
 * @param engine the generation engines over the step ({@code null} where they were not read: telemetry off, lines
 *     written before it was recorded)
 */
public record StepRecord(int step, String mode, double rewardMean, double rewardStd, double kl, double loss,
    double clipFraction, long tokens, double tokensPerSecond, double stepSeconds, Map<String, Double> phases,
    long weightVersion, int trajectories, int droppedForAge, long rayCalls, String traceId, Completions completions,
    Eval eval, Update update, Rewards rewards, Lag lag, Engine engine) {
  /**
   * The generation engines between the previous step's end and this one's, summed over the generation workers:
   * one point per step of what the engines' metrics show per export. Read from each worker's engine counters
   * ({@code EngineStats}) at the step's end; a value an engine does not measure is {@code null}.
   *
   * @param requests requests the engines finished
   * @param queueTimeMean mean seconds from a request's arrival to its first scheduling, over the requests
   *     scheduled ({@code null} when none was)
   * @param preemptions evictions from a running batch
   * @param runningMean requests running, time-weighted mean over the interval, summed over the engines
   *     ({@code null} where an engine does not measure its load: an inference server read over HTTP)
   * @param waitingMean requests waiting, the same way
   * @param kvUsageMean share of the KV token budget held, time-weighted mean, averaged over the engines
   */
  public record Engine(long requests, Double queueTimeMean, long preemptions, Double runningMean,
      Double waitingMean, Double kvUsageMean) {}

  /**
   * Policy lag: how many weight versions behind the policy the step trained each trajectory was sampled (the
   * oldest version that sampled one of its tokens), and how full the async pipeline was as the step ended.
   *
   * @param ages trajectories by age ({@code 0}: sampled by the policy the step trained, on-policy), ascending
   * @param meanAge the mean age
   * @param maxAge the largest age
   * @param bufferDepth groups waiting in the replay buffer as the step ended (async; 0 in sync)
   * @param inFlight generate calls the collector had in flight as the step ended (async; 0 in sync)
   */
  public record Lag(Map<Integer, Integer> ages, double meanAge, int maxAge, int bufferDepth, int inFlight) {
    public Lag {
      ages = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(ages == null ? Map.of() : ages));
    }

    /** The lag of {@code versions}, the behaviour versions of a step's trajectories, behind {@code trained}. */
    public static Lag of(long trained, java.util.List<Long> versions, int bufferDepth, int inFlight) {
      Map<Integer, Integer> ages = new java.util.TreeMap<>();
      long sum = 0;
      int max = 0;
      for (long v : versions) {
        int age = (int) Math.max(0, trained - v);
        ages.merge(age, 1, Integer::sum);
        sum += age;
        max = Math.max(max, age);
      }
      return new Lag(ages, versions.isEmpty() ? 0 : (double) sum / versions.size(), max, bufferDepth, inFlight);
    }
  }

  /**
   * What a step's policy update measured (the trainer's {@code TrainMetrics}).
   *
   * @param gradNorm the global gradient norm before clipping ({@code trainer.max_grad_norm})
   * @param learningRate the learning rate of the step's first optimizer step
   * @param entropy the mean entropy of the policy's distribution at the sampled completion tokens
   * @param clipLow the share of tokens clipped at {@code 1 - clip_epsilon_low}
   * @param clipHigh the share clipped at {@code 1 + clip_epsilon_high}
   * @param clipDual the share held by the dual clip
   * @param ratioMean the mean importance ratio (to the behaviour policy, or with TIS to the step's start)
   * @param ratioMax its maximum
   * @param tisTruncated the share of tokens whose importance weight reached {@code grpo.tis_cap}
   * @param zeroAdvantageGroups groups whose rewards were all equal (no learning signal)
   * @param keptSequences sequences in the update ({@code grpo.filter_zero_advantage} drops the others)
   * @param epochs optimizer steps taken ({@code grpo.ppo_epochs}; 0 when no sequence was kept)
   */
  public record Update(double gradNorm, double learningRate, double entropy, double clipLow, double clipHigh,
      double clipDual, double ratioMean, double ratioMax, double tisTruncated, int zeroAdvantageGroups,
      int keptSequences, int epochs) {}

  /**
   * The lengths of a step's completions.
   *
   * @param meanTokens the mean completion length in tokens (EOS included)
   * @param maxTokens the longest
   * @param clipped completions cut at {@code grpo.max_new_tokens} before they ended (no EOS)
   */
  public record Completions(double meanTokens, int maxTokens, int clipped) {}

  /**
   * How the policy did on the eval set ({@code data.eval}).
   *
   * @param reward the mean reward of the eval completions
   * @param accuracy the share of eval completions whose reward reached {@code eval.pass_threshold}
   * @param completions how many completions were scored
   */
  public record Eval(double reward, double accuracy, int completions) {}

  /**
   * What the reward function gave beyond the reward itself.
   *
   * @param components the mean of each named component over the step's completions (a function that returns a
   *     mapping of components; empty for one that returns numbers), in the function's order
   * @param failed completions scored 0 because the function raised ({@code reward.on_error: zero})
   */
  public record Rewards(Map<String, Double> components, int failed) {
    public Rewards {
      components = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(
          components == null ? Map.of() : components));
    }
  }

  /** A step that did not evaluate. */
  public StepRecord(int step, String mode, double rewardMean, double rewardStd, double kl, double loss,
      double clipFraction, long tokens, double tokensPerSecond, double stepSeconds, Map<String, Double> phases,
      long weightVersion, int trajectories, int droppedForAge, long rayCalls, String traceId) {
    this(step, mode, rewardMean, rewardStd, kl, loss, clipFraction, tokens, tokensPerSecond, stepSeconds, phases,
        weightVersion, trajectories, droppedForAge, rayCalls, traceId, null, null, null, null, null, null);
  }

  /** A step recorded without its lag (lines written before it was). */
  public StepRecord(int step, String mode, double rewardMean, double rewardStd, double kl, double loss,
      double clipFraction, long tokens, double tokensPerSecond, double stepSeconds, Map<String, Double> phases,
      long weightVersion, int trajectories, int droppedForAge, long rayCalls, String traceId, Completions completions,
      Eval eval, Update update, Rewards rewards) {
    this(step, mode, rewardMean, rewardStd, kl, loss, clipFraction, tokens, tokensPerSecond, stepSeconds, phases,
        weightVersion, trajectories, droppedForAge, rayCalls, traceId, completions, eval, update, rewards, null, null);
  }

  /** A step recorded without the engines' figures. */
  public StepRecord(int step, String mode, double rewardMean, double rewardStd, double kl, double loss,
      double clipFraction, long tokens, double tokensPerSecond, double stepSeconds, Map<String, Double> phases,
      long weightVersion, int trajectories, int droppedForAge, long rayCalls, String traceId, Completions completions,
      Eval eval, Update update, Rewards rewards, Lag lag) {
    this(step, mode, rewardMean, rewardStd, kl, loss, clipFraction, tokens, tokensPerSecond, stepSeconds, phases,
        weightVersion, trajectories, droppedForAge, rayCalls, traceId, completions, eval, update, rewards, lag, null);
  }

  /** This step with the engines' figures over it. */
  public StepRecord withEngine(Engine e) {
    return new StepRecord(step, mode, rewardMean, rewardStd, kl, loss, clipFraction, tokens, tokensPerSecond,
        stepSeconds, phases, weightVersion, trajectories, droppedForAge, rayCalls, traceId, completions, eval, update,
        rewards, lag, e);
  }

  /** This step with its eval scores. */
  public StepRecord withEval(Eval e) {
    return new StepRecord(step, mode, rewardMean, rewardStd, kl, loss, clipFraction, tokens, tokensPerSecond,
        stepSeconds, phases, weightVersion, trajectories, droppedForAge, rayCalls, traceId, completions, e, update,
        rewards, lag, engine);
  }
  static final ObjectMapper JSON = new ObjectMapper()
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  public StepRecord {
    if (mode == null || phases == null) {
      throw new IllegalArgumentException("a step has a mode and phases");
    }
    phases = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(phases));
  }

  /** This step as one JSON line (no line break). */
  public String toJsonLine() {
    try {
      return JSON.writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write step " + step + " as JSON: " + e.getOriginalMessage(), e);
    }
  }

  /**
   * A line of {@code steps.jsonl}.
   *
   * @throws IllegalArgumentException when the line is not a step's JSON (a driver killed mid-write leaves one)
   */
  public static StepRecord parse(String line) {
    try {
      return JSON.readValue(line, StepRecord.class);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not a step line: " + e.getOriginalMessage(), e);
    }
  }
}
