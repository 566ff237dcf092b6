package dev.ravel.telemetry.runs;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A run folder's {@code run.json}: what the run was and what it measured, written once when it ends and read by
 * {@code ravel runs}, {@code ravel report} and {@code ravel trace --jaeger}. This class alone writes and reads
 * the file: {@link #write(Path)} and {@link #read(Path)}.
 *
 * @param runId the run's id (its folder's name)
 * @param mode {@code sync}, {@code async}, or {@code demo}
 * @param status how it ended
 * @param started when the driver started
 * @param finished when it wrote this record
 * @param steps steps the run completed in this attempt
 * @param config the whole resolved configuration ({@code section.key} to value), telemetry's included
 * @param stepMetrics the completed steps
 * @param details what the run measured, by section, written beside the fields above ({@code engines},
 *     {@code collector}, {@code buffer}, {@code faults}, {@code telemetry}, {@code versions}, ...)
 */
public record RunRecord(String runId, String mode, Status status, Instant started, Instant finished, int steps,
    Map<String, Object> config, List<StepRecord> stepMetrics, Map<String, Object> details) {
  /** The file name inside a run folder. */
  public static final String FILE = "run.json";

  private static final String RUN_ID = "run_id";
  private static final String MODE = "mode";
  private static final String STATUS = "status";
  private static final String STARTED = "started";
  private static final String FINISHED = "finished";
  private static final String STEPS = "steps";
  private static final String CONFIG = "config";
  private static final String STEP_METRICS = "step_metrics";
  private static final List<String> FIELDS =
      List.of(RUN_ID, MODE, STATUS, STARTED, FINISHED, STEPS, CONFIG, STEP_METRICS);
  /** The {@link #details()} section with the versions of Ravel, Ray, Java and Python the run ran on. */
  public static final String VERSIONS = "versions";

  /** How a run ended. */
  public enum Status {
    /** Every step ran. */
    SUCCEEDED,
    /** A step or the set-up failed. */
    FAILED,
    /** SIGINT or SIGTERM stopped it after a completed step. */
    INTERRUPTED;

    /** The name in {@code run.json} and in the command line's output. */
    public String jsonName() {
      return name().toLowerCase(Locale.ROOT);
    }

    static Status parse(String s, Path file) {
      for (Status v : values()) {
        if (v.jsonName().equals(s)) {
          return v;
        }
      }
      throw new IllegalArgumentException(file + ": unknown status '" + s + "'");
    }
  }

  public RunRecord {
    if (runId == null || mode == null || status == null || started == null || finished == null) {
      throw new IllegalArgumentException("a run record has a run id, mode, status, start and finish");
    }
    config = Collections.unmodifiableMap(new LinkedHashMap<>(config));
    stepMetrics = List.copyOf(stepMetrics);
    details = Collections.unmodifiableMap(new LinkedHashMap<>(details));
    for (String k : details.keySet()) {
      if (FIELDS.contains(k)) {
        throw new IllegalArgumentException("details must not hold the record's own field '" + k + "'");
      }
    }
  }

  /** The versions the run ran on ({@code ravel}, {@code ray}, {@code java}, ...), empty when not recorded. */
  public Map<String, String> versions() {
    Object v = details.get(VERSIONS);
    if (!(v instanceof Map<?, ?> m)) {
      return Map.of();
    }
    Map<String, String> out = new LinkedHashMap<>();
    m.forEach((k, x) -> out.put(String.valueOf(k), String.valueOf(x)));
    return out;
  }

  /** Writes {@code runDir/run.json} (creating the folder); returns its path. */
  public Path write(Path runDir) {
    ObjectNode root = StepRecord.JSON.createObjectNode();
    root.put(RUN_ID, runId);
    root.put(MODE, mode);
    root.put(STATUS, status.jsonName());
    root.put(STARTED, started.toString());
    root.put(FINISHED, finished.toString());
    root.put(STEPS, steps);
    root.set(CONFIG, StepRecord.JSON.valueToTree(config));
    root.set(STEP_METRICS, StepRecord.JSON.valueToTree(stepMetrics));
    details.forEach((k, v) -> root.set(k, StepRecord.JSON.valueToTree(v)));
    Path file = runDir.resolve(FILE);
    try {
      Files.createDirectories(runDir);
      StepRecord.JSON.writer().with(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), root);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
    }
  }

  /**
   * {@code runDir/run.json}, or empty when the run has not written one (it is running, or its driver was killed).
   *
   * @throws IllegalArgumentException naming the file and the field when it is not a run record
   * @throws UncheckedIOException when it cannot be read
   */
  public static Optional<RunRecord> read(Path runDir) {
    Path file = runDir.resolve(FILE);
    if (!Files.isRegularFile(file)) {
      return Optional.empty();
    }
    JsonNode root;
    try {
      root = StepRecord.JSON.readTree(file.toFile());
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException(file + ": not JSON (" + e.getOriginalMessage() + ")", e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException(file + ": not a JSON object");
    }
    List<StepRecord> steps = new ArrayList<>();
    for (JsonNode s : root.path(STEP_METRICS)) {
      try {
        steps.add(StepRecord.JSON.treeToValue(s, StepRecord.class));
      } catch (IOException | IllegalArgumentException e) {
        throw new IllegalArgumentException(file + ": " + STEP_METRICS + "[" + steps.size() + "] is not a step ("
            + e.getMessage() + ")", e);
      }
    }
    Map<String, Object> details = new LinkedHashMap<>();
    root.fields().forEachRemaining(e -> {
      if (!FIELDS.contains(e.getKey())) {
        details.put(e.getKey(), StepRecord.JSON.convertValue(e.getValue(), Object.class));
      }
    });
    return Optional.of(new RunRecord(text(root, RUN_ID, file), text(root, MODE, file),
        Status.parse(text(root, STATUS, file), file), instant(root, STARTED, file), instant(root, FINISHED, file),
        root.path(STEPS).asInt(steps.size()),
        StepRecord.JSON.convertValue(root.path(CONFIG).isObject() ? root.get(CONFIG) : StepRecord.JSON.createObjectNode(),
            new TypeReference<Map<String, Object>>() { }),
        steps, details));
  }

  private static String text(JsonNode root, String field, Path file) {
    JsonNode v = root.get(field);
    if (v == null || !v.isTextual()) {
      throw new IllegalArgumentException(file + ": " + field + " is missing or not a string");
    }
    return v.asText();
  }

  private static Instant instant(JsonNode root, String field, Path file) {
    String t = text(root, field, file);
    try {
      return Instant.parse(t);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(file + ": " + field + " '" + t + "' is not an ISO-8601 instant", e);
    }
  }
}
