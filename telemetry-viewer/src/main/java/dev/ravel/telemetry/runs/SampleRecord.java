package dev.ravel.telemetry.runs;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.util.Map;

/**
 * One completion a step kept for people to read: a line of the run folder's {@code samples.jsonl}
 * ({@code telemetry.samples_per_step} lines per step, appended as the step ends). Written by
 * {@link #toJsonLine()} and read by {@link #parse(String)}; nothing else spells its fields.
 *
 * @param step the step's number, 1-based (as {@code steps.jsonl} numbers it)
 * @param group the prompt's position in the step's batch, 0-based
 * @param index the completion's position in its group, 0-based
 * @param prompt the prompt as the policy saw it (after the chat template)
 * @param completion the completion as the reward function saw it (decoded)
 * @param answer the row's reference answer (empty when rows have none)
 * @param reward the completion's reward
 * @param components the reward's named components (empty when the function returns numbers)
 * @param tokens the completion's length in tokens
 * @param weightVersion the weights that sampled it
 */
public record SampleRecord(int step, int group, int index, String prompt, String completion, String answer,
    double reward, Map<String, Double> components, int tokens, long weightVersion) {
  /** The file in the run folder. */
  public static final String FILE = dev.ravel.telemetry.traces.RunTraces.SAMPLES_FILE;

  public SampleRecord {
    if (step < 1 || group < 0 || index < 0) {
      throw new IllegalArgumentException("a sample has a step (>= 1), group and index (>= 0): " + step + "/"
          + group + "/" + index);
    }
    prompt = prompt == null ? "" : prompt;
    completion = completion == null ? "" : completion;
    answer = answer == null ? "" : answer;
    components = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(
        components == null ? Map.of() : components));
  }

  /** This sample as one JSON line (no line break). */
  public String toJsonLine() {
    try {
      return StepRecord.JSON.writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write a sample of step " + step + " as JSON: " + e.getOriginalMessage(),
          e);
    }
  }

  /**
   * A line of {@code samples.jsonl}.
   *
   * @throws IllegalArgumentException when the line is not a sample's JSON (a driver killed mid-write leaves one)
   */
  public static SampleRecord parse(String line) {
    try {
      return StepRecord.JSON.readValue(line, SampleRecord.class);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not a sample line: " + e.getOriginalMessage(), e);
    }
  }
}
