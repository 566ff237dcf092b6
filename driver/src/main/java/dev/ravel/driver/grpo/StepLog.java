package dev.ravel.driver.grpo;

import dev.ravel.telemetry.runs.StepRecord;

import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.StepMetricNames;
import dev.ravel.telemetry.traces.RunTraces;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.DoubleGauge;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.Meter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import dev.ravel.telemetry.runs.SampleRecord;
import dev.ravel.workers.grpo.Scoring;
import dev.ravel.workers.grpo.Trajectory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A run's steps as they end, for people watching it: one JSON line per step appended to
 * {@code runs/<run-id>/steps.jsonl} (the {@link StepRecord} of {@code run.json}'s {@code step_metrics}, so a
 * crashed run keeps its curves), and the run's step metrics ({@link StepMetricNames}) in its OpenTelemetry
 * metrics. Telemetry never breaks a step: a failure to record is logged once and the step goes on.
 */
final class StepLog {
  /** The file in the run folder. */
  static final String FILE = RunTraces.STEP_LOG_FILE;
  private static final Logger LOG = LoggerFactory.getLogger(StepLog.class);

  private final Path file;
  private final Path samplesFile;
  private final int samplesPerStep;
  private final DoubleGauge rewardComponent;
  private final LongCounter rewardFailed;
  private final DoubleGauge rewardMean;
  private final DoubleGauge rewardStd;
  private final DoubleGauge evalReward;
  private final DoubleGauge evalAccuracy;
  private final DoubleGauge kl;
  private final DoubleGauge loss;
  private final DoubleGauge clipFraction;
  private final DoubleGauge tokensPerSecond;
  private final DoubleGauge gradNorm;
  private final DoubleGauge learningRate;
  private final DoubleGauge entropy;
  private final DoubleGauge clipSide;
  private final DoubleGauge ratioMean;
  private final DoubleGauge ratioMax;
  private final DoubleGauge tisTruncated;
  private final DoubleGauge zeroAdvantageGroups;
  private final DoubleGauge responseLength;
  private final DoubleGauge clippedShare;
  private final DoubleHistogram duration;
  private final DoubleHistogram phaseDuration;
  private final LongCounter trajectories;
  private final io.opentelemetry.api.metrics.LongHistogram policyLag;
  private final io.opentelemetry.api.metrics.LongGauge bufferDepth;
  private final io.opentelemetry.api.metrics.LongGauge collectorInFlight;
  private boolean warned;

  StepLog(Path runDir, Meter meter) {
    this(runDir, meter, 0);
  }

  /** As above, keeping {@code samplesPerStep} completions of each step in {@code samples.jsonl}. */
  StepLog(Path runDir, Meter meter, int samplesPerStep) {
    this.file = runDir.resolve(FILE);
    this.samplesFile = runDir.resolve(SampleRecord.FILE);
    this.samplesPerStep = samplesPerStep;
    this.rewardComponent = meter.gaugeBuilder(StepMetricNames.REWARD_COMPONENT)
        .setDescription("mean of a named component of the step's rewards").build();
    this.rewardFailed = meter.counterBuilder(StepMetricNames.REWARD_FAILED).setUnit("{completion}")
        .setDescription("completions scored 0 because the reward function raised (reward.on_error: zero)").build();
    this.rewardMean = meter.gaugeBuilder(StepMetricNames.REWARD_MEAN).setDescription("mean reward of the step").build();
    this.rewardStd = meter.gaugeBuilder(StepMetricNames.REWARD_STD)
        .setDescription("standard deviation of the step's rewards").build();
    this.evalReward = meter.gaugeBuilder(StepMetricNames.EVAL_REWARD).setDescription("mean reward on the eval set")
        .build();
    this.evalAccuracy = meter.gaugeBuilder(StepMetricNames.EVAL_ACCURACY)
        .setDescription("share of eval completions at or above eval.pass_threshold").build();
    this.kl = meter.gaugeBuilder(StepMetricNames.KL).setDescription("k3 KL to the reference policy").build();
    this.loss = meter.gaugeBuilder(StepMetricNames.LOSS).setDescription("GRPO loss of the update").build();
    this.clipFraction = meter.gaugeBuilder(StepMetricNames.CLIP_FRACTION)
        .setDescription("share of tokens whose ratio was clipped").build();
    this.tokensPerSecond = meter.gaugeBuilder(StepMetricNames.TOKENS_PER_SECOND).setUnit("{token}/s")
        .setDescription("generated tokens per second of generation").build();
    this.gradNorm = meter.gaugeBuilder(StepMetricNames.GRAD_NORM)
        .setDescription("global gradient norm of the update before clipping").build();
    this.learningRate = meter.gaugeBuilder(StepMetricNames.LEARNING_RATE)
        .setDescription("learning rate of the step's first optimizer step").build();
    this.entropy = meter.gaugeBuilder(StepMetricNames.ENTROPY)
        .setDescription("mean entropy of the policy at the sampled completion tokens").build();
    this.clipSide = meter.gaugeBuilder(StepMetricNames.CLIP_SIDE_FRACTION)
        .setDescription("share of tokens clipped at the low or high end, or by the dual clip").build();
    this.ratioMean = meter.gaugeBuilder(StepMetricNames.RATIO_MEAN).setDescription("mean importance ratio").build();
    this.ratioMax = meter.gaugeBuilder(StepMetricNames.RATIO_MAX).setDescription("largest importance ratio").build();
    this.tisTruncated = meter.gaugeBuilder(StepMetricNames.TIS_TRUNCATED)
        .setDescription("share of tokens whose importance weight reached grpo.tis_cap").build();
    this.zeroAdvantageGroups = meter.gaugeBuilder(StepMetricNames.ZERO_ADVANTAGE_GROUPS).setUnit("{group}")
        .setDescription("groups whose rewards were all equal (no learning signal)").build();
    this.responseLength = meter.gaugeBuilder(StepMetricNames.RESPONSE_LENGTH_MEAN).setUnit("{token}")
        .setDescription("mean completion length").build();
    this.clippedShare = meter.gaugeBuilder(StepMetricNames.COMPLETIONS_CLIPPED_SHARE)
        .setDescription("share of completions cut at grpo.max_new_tokens").build();
    this.duration = meter.histogramBuilder(StepMetricNames.DURATION).setUnit("s")
        .setDescription("wall time of the step").build();
    this.phaseDuration = meter.histogramBuilder(StepMetricNames.PHASE_DURATION).setUnit("s")
        .setDescription("wall time of a span group of the step").build();
    this.trajectories = meter.counterBuilder(StepMetricNames.TRAJECTORIES).setUnit("{trajectory}")
        .setDescription("trajectories trained on (used) or dropped as too old").build();
    this.policyLag = meter.histogramBuilder(StepMetricNames.POLICY_LAG).ofLongs().setUnit("{version}")
        .setDescription("weight versions between the policy a step trained and the one that sampled a trajectory")
        .setExplicitBucketBoundariesAdvice(List.of(0L, 1L, 2L, 3L, 4L, 6L, 8L, 16L)).build();
    this.bufferDepth = meter.gaugeBuilder(StepMetricNames.BUFFER_DEPTH).ofLongs().setUnit("{group}")
        .setDescription("groups waiting in the replay buffer as the step ended").build();
    this.collectorInFlight = meter.gaugeBuilder(StepMetricNames.COLLECTOR_IN_FLIGHT).ofLongs().setUnit("{call}")
        .setDescription("generate calls the collector had in flight as the step ended").build();
  }

  /** Appends the step's line and records its metrics. */
  void record(StepRecord m) {
    record(m, List.of());
  }

  /**
   * Appends the step's line, then the samples of {@code batch} to {@code samples.jsonl}, and records the step's
   * metrics.
   */
  void record(StepRecord m, List<Trajectory> batch) {
    List<SampleRecord> samples = samples(m.step(), batch, samplesPerStep);
    if (!samples.isEmpty()) {
      StringBuilder lines = new StringBuilder();
      samples.forEach(x -> lines.append(x.toJsonLine()).append('\n'));
      try {
        Files.createDirectories(samplesFile.getParent());
        Files.write(samplesFile, lines.toString().getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE,
            StandardOpenOption.APPEND, StandardOpenOption.WRITE);
      } catch (IOException | RuntimeException e) {
        warnOnce("could not append step " + m.step() + "'s samples to " + samplesFile, e);
      }
    }
    recordStep(m);
  }

  /**
   * The completions of {@code batch} a step keeps: {@code n} of them spread over its groups (group
   * {@code j * groups / n}, its completion {@code j % groupSize}), the same for the same batch, so a resumed
   * run keeps the samples of an uninterrupted one. Only trajectories that kept their scoring are sampled.
   */
  static List<SampleRecord> samples(int step, List<Trajectory> batch, int n) {
    if (n <= 0 || batch.isEmpty()) {
      return List.of();
    }
    int groupSize = 1;
    while (groupSize < batch.size() && batch.get(groupSize).groupIndex() != 0) {
      groupSize++;
    }
    int groups = batch.size() / groupSize;
    List<SampleRecord> out = new ArrayList<>();
    for (int j = 0; j < Math.min(n, batch.size()); j++) {
      int group = n <= groups ? (int) ((long) j * groups / n) : j % groups;
      int index = n <= groups ? j % groupSize : (j / groups) % groupSize;
      Trajectory t = batch.get(group * groupSize + index);
      Scoring s = t.scoring();
      if (s != null) {
        out.add(new SampleRecord(step, group, t.groupIndex(), s.prompt(), s.completion(), s.answer(), t.reward(),
            s.components(), t.completionLength(), t.weightVersion()));
      }
    }
    return out;
  }

  private void recordStep(StepRecord m) {
    try {
      Files.createDirectories(file.getParent());
      Files.write(file, (m.toJsonLine() + "\n").getBytes(StandardCharsets.UTF_8),
          StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
    } catch (IOException | RuntimeException e) {
      warnOnce("could not append step " + m.step() + " to " + file, e);
    }
    try {
      // labelled by mode only: a label per step would start a new series on every instrument each step (time is
      // the step axis; steps.jsonl has the step numbers)
      Attributes step = Attributes.of(RavelAttributes.ALGORITHM_MODE, m.mode());
      rewardMean.set(m.rewardMean(), step);
      rewardStd.set(m.rewardStd(), step);
      if (m.eval() != null) {
        evalReward.set(m.eval().reward(), step);
        evalAccuracy.set(m.eval().accuracy(), step);
      }
      kl.set(m.kl(), step);
      loss.set(m.loss(), step);
      clipFraction.set(m.clipFraction(), step);
      tokensPerSecond.set(m.tokensPerSecond(), step);
      StepRecord.Update u = m.update();
      if (u != null) {
        gradNorm.set(u.gradNorm(), step);
        learningRate.set(u.learningRate(), step);
        entropy.set(u.entropy(), step);
        clipSide.set(u.clipLow(), step.toBuilder().put(StepMetricNames.CLIP_SIDE, "low").build());
        clipSide.set(u.clipHigh(), step.toBuilder().put(StepMetricNames.CLIP_SIDE, "high").build());
        clipSide.set(u.clipDual(), step.toBuilder().put(StepMetricNames.CLIP_SIDE, "dual").build());
        ratioMean.set(u.ratioMean(), step);
        ratioMax.set(u.ratioMax(), step);
        tisTruncated.set(u.tisTruncated(), step);
        zeroAdvantageGroups.set(u.zeroAdvantageGroups(), step);
      }
      if (m.completions() != null) {
        responseLength.set(m.completions().meanTokens(), step);
        clippedShare.set(m.trajectories() == 0 ? 0 : (double) m.completions().clipped() / m.trajectories(), step);
      }
      if (m.rewards() != null) {
        m.rewards().components().forEach((name, mean) -> rewardComponent.set(mean,
            step.toBuilder().put(StepMetricNames.COMPONENT, name).build()));
        rewardFailed.add(m.rewards().failed(), step);
      }
      duration.record(m.stepSeconds(), step);
      for (Map.Entry<String, Double> p : m.phases().entrySet()) {
        phaseDuration.record(p.getValue(), step.toBuilder().put(StepMetricNames.PHASE, p.getKey()).build());
      }
      trajectories.add(m.trajectories(), step.toBuilder().put(StepMetricNames.TRAJECTORY_STATE, "used").build());
      trajectories.add(m.droppedForAge(), step.toBuilder().put(StepMetricNames.TRAJECTORY_STATE, "dropped").build());
      if (m.lag() != null) {
        m.lag().ages().forEach((age, n) -> {
          for (int i = 0; i < n; i++) {
            policyLag.record(age, step);
          }
        });
        bufferDepth.set(m.lag().bufferDepth(), step);
        collectorInFlight.set(m.lag().inFlight(), step);
      }
    } catch (RuntimeException e) {
      warnOnce("could not record the metrics of step " + m.step(), e);
    }
  }

  private void warnOnce(String what, Exception e) {
    if (!warned) {
      warned = true;
      LOG.warn("{}: {} (later failures are not logged)", what, e.toString());
    }
  }
}
