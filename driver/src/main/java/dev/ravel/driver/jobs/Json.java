package dev.ravel.driver.jobs;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ravel.telemetry.config.ConfigException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON shapes of Ray 2.39.0's Jobs API (dashboard/modules/job: {@code JobSubmitRequest},
 * {@code JobSubmitResponse}, {@code JobStopResponse}, {@code JobDeleteResponse}, {@code JobLogsResponse} in
 * common.py; {@code JobDetails} and {@code DriverInfo} in pydantic_models.py), mapped by Jackson.
 */
final class Json {
  static final ObjectMapper MAPPER = new ObjectMapper()
      .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  private Json() {}

  /** {@code POST /api/jobs/} body; null fields are left out (the server strips them anyway). */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record SubmitBody(
      @JsonProperty("entrypoint") String entrypoint,
      @JsonProperty("submission_id") String submissionId,
      @JsonProperty("runtime_env") Map<String, Object> runtimeEnv,
      @JsonProperty("metadata") Map<String, String> metadata,
      @JsonProperty("entrypoint_num_cpus") Double entrypointNumCpus,
      @JsonProperty("entrypoint_num_gpus") Double entrypointNumGpus,
      @JsonProperty("entrypoint_memory") Long entrypointMemory,
      @JsonProperty("entrypoint_resources") Map<String, Double> entrypointResources) {}

  /** {@code POST /api/jobs/} answer. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record SubmitResponse(
      @JsonProperty("job_id") String jobId,
      @JsonProperty("submission_id") String submissionId) {}

  /** {@code POST /api/jobs/{id}/stop} answer. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record StopResponse(@JsonProperty("stopped") boolean stopped) {}

  /** {@code DELETE /api/jobs/{id}} answer. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record DeleteResponse(@JsonProperty("deleted") boolean deleted) {}

  /** {@code GET /api/jobs/{id}/logs} answer. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record LogsResponse(@JsonProperty("logs") String logs) {}

  /** {@code GET /api/version} answer. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record VersionResponse(
      @JsonProperty("version") String version,
      @JsonProperty("ray_version") String rayVersion,
      @JsonProperty("session_name") String sessionName) {}

  /** {@code GET /nodes?view=summary} answer (the dashboard's node module): each node's GCS entry under "raylet". */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record NodesResponse(@JsonProperty("data") NodesData data) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  record NodesData(@JsonProperty("summary") List<NodeSummary> summary) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  record NodeSummary(@JsonProperty("raylet") Raylet raylet) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  record Raylet(
      @JsonProperty("state") String state,
      @JsonProperty("nodeManagerAddress") String nodeManagerAddress) {}

  /** {@code DriverInfo}. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record Driver(
      @JsonProperty("id") String id,
      @JsonProperty("node_ip_address") String nodeIpAddress,
      @JsonProperty("pid") String pid) {}

  /** {@code JobDetails}: an element of {@code GET /api/jobs/}, the answer of {@code GET /api/jobs/{id}}. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record Details(
      @JsonProperty("type") String type,
      @JsonProperty("job_id") String jobId,
      @JsonProperty("submission_id") String submissionId,
      @JsonProperty("driver_info") Driver driverInfo,
      @JsonProperty("status") String status,
      @JsonProperty("entrypoint") String entrypoint,
      @JsonProperty("message") String message,
      @JsonProperty("error_type") String errorType,
      @JsonProperty("start_time") Long startTime,
      @JsonProperty("end_time") Long endTime,
      @JsonProperty("metadata") Map<String, String> metadata,
      @JsonProperty("runtime_env") Map<String, Object> runtimeEnv,
      @JsonProperty("driver_agent_http_address") String driverAgentHttpAddress,
      @JsonProperty("driver_node_id") String driverNodeId,
      @JsonProperty("driver_exit_code") Integer driverExitCode) {}

  static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new JobsException("cannot write JSON: " + e.getOriginalMessage(), e);
    }
  }

  static <T> T read(String body, Class<T> type, String what) {
    try {
      T v = MAPPER.readValue(body, type);
      if (v == null) {
        throw new JobsException(what + ": the dashboard answered null");
      }
      return v;
    } catch (JsonProcessingException e) {
      throw new JobsException(what + ": unexpected answer from the dashboard (" + e.getOriginalMessage() + ")", e);
    }
  }

  static <T> List<T> readList(String body, Class<T> type, String what) {
    try {
      List<T> v = MAPPER.readValue(body, MAPPER.getTypeFactory().constructCollectionType(List.class, type));
      return v == null ? List.of() : v;
    } catch (JsonProcessingException e) {
      throw new JobsException(what + ": unexpected answer from the dashboard (" + e.getOriginalMessage() + ")", e);
    }
  }

  /**
   * A deeply unmodifiable copy of a JSON-like value (maps with string keys, lists, strings, numbers,
   * booleans, null); anything else is an error naming {@code key}.
   */
  static Object freeze(String key, Object value) {
    if (value == null || value instanceof String || value instanceof Number || value instanceof Boolean) {
      return value;
    }
    if (value instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!(e.getKey() instanceof String k)) {
          throw new ConfigException(key, "keys must be strings, got " + e.getKey());
        }
        out.put(k, freeze(key + "." + k, e.getValue()));
      }
      return Collections.unmodifiableMap(out);
    }
    if (value instanceof List<?> l) {
      List<Object> out = new ArrayList<>();
      for (int i = 0; i < l.size(); i++) {
        out.add(freeze(key + "[" + i + "]", l.get(i)));
      }
      return Collections.unmodifiableList(out);
    }
    throw new ConfigException(key, "must be a JSON value (map, list, string, number, boolean), got "
        + value.getClass().getSimpleName());
  }
}
