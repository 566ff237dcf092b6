package dev.ravel.driver.jobs;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * One job as the dashboard describes it (Ray 2.39.0's {@code JobDetails}): its type ({@code SUBMISSION} for
 * jobs submitted through the Jobs API, {@code DRIVER} for drivers that connected by themselves), ids, status,
 * message, entrypoint, metadata, runtime environment, start and end times and the entrypoint's exit code.
 * Immutable. {@link #runtimeEnv()} may hold secrets; {@link #toString()} masks secret-looking values.
 */
public final class JobInfo {
  /** {@code type} of a job submitted through the Jobs API. */
  public static final String SUBMISSION = "SUBMISSION";
  /** {@code type} of a driver that connected to the cluster by itself. */
  public static final String DRIVER = "DRIVER";

  private final String type;
  private final String submissionId;
  private final String jobId;
  private final JobStatus status;
  private final String message;
  private final String errorType;
  private final String entrypoint;
  private final Map<String, String> metadata;
  private final Map<String, Object> runtimeEnv;
  private final Instant startTime;
  private final Instant endTime;
  private final Integer driverExitCode;

  private JobInfo(Builder b) {
    this.type = b.type;
    this.submissionId = b.submissionId;
    this.jobId = b.jobId;
    this.status = b.status;
    this.message = b.message == null ? "" : b.message;
    this.errorType = b.errorType;
    this.entrypoint = b.entrypoint == null ? "" : b.entrypoint;
    this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(b.metadata));
    @SuppressWarnings("unchecked")
    Map<String, Object> env = (Map<String, Object>) Json.freeze("runtime_env", b.runtimeEnv);
    this.runtimeEnv = env;
    this.startTime = b.startTime;
    this.endTime = b.endTime;
    this.driverExitCode = b.driverExitCode;
  }

  public static Builder builder(JobStatus status) {
    return new Builder(status);
  }

  static JobInfo from(Json.Details d) {
    Builder b = builder(JobStatus.parse(d.status()))
        .type(d.type() == null ? SUBMISSION : d.type())
        .submissionId(d.submissionId())
        .jobId(d.jobId())
        .message(d.message())
        .errorType(d.errorType())
        .entrypoint(d.entrypoint());
    if (d.metadata() != null) {
      d.metadata().forEach((k, v) -> b.metadata(k, v == null ? "" : v));
    }
    if (d.runtimeEnv() != null) {
      b.runtimeEnv(d.runtimeEnv());
    }
    if (d.startTime() != null && d.startTime() > 0) {
      b.startTime(Instant.ofEpochMilli(d.startTime()));
    }
    if (d.endTime() != null && d.endTime() > 0) {
      b.endTime(Instant.ofEpochMilli(d.endTime()));
    }
    if (d.driverExitCode() != null) {
      b.driverExitCode(d.driverExitCode());
    }
    return b.build();
  }

  /** {@link #SUBMISSION} or {@link #DRIVER}. */
  public String type() {
    return type;
  }

  /** The submission id; empty for a {@code DRIVER} job. */
  public Optional<String> submissionId() {
    return Optional.ofNullable(submissionId);
  }

  /** Ray's job id of the job's driver (e.g. {@code 02000000}), once a driver has connected. */
  public Optional<String> jobId() {
    return Optional.ofNullable(jobId);
  }

  /** The id to use in later calls: the submission id, else the job id. */
  public String id() {
    return submissionId != null ? submissionId : String.valueOf(jobId);
  }

  public JobStatus status() {
    return status;
  }

  /** Ray's explanation of the status (for a failed job: the exit code and the log's last lines). */
  public String message() {
    return message;
  }

  public Optional<String> errorType() {
    return Optional.ofNullable(errorType);
  }

  public String entrypoint() {
    return entrypoint;
  }

  public Map<String, String> metadata() {
    return metadata;
  }

  /** The job's runtime environment. Secret: may hold tokens in {@code env_vars}. */
  public Map<String, Object> runtimeEnv() {
    return runtimeEnv;
  }

  public Optional<Instant> startTime() {
    return Optional.ofNullable(startTime);
  }

  public Optional<Instant> endTime() {
    return Optional.ofNullable(endTime);
  }

  /** The entrypoint's exit code, once it has exited by itself. */
  public OptionalInt driverExitCode() {
    return driverExitCode == null ? OptionalInt.empty() : OptionalInt.of(driverExitCode);
  }

  /** A description safe to log: secret-looking env_vars and metadata values masked. */
  @Override
  public String toString() {
    return "JobInfo{" + type + " " + id() + " " + status + (message.isEmpty() ? "" : " (" + firstLine(message) + ")")
        + ", entrypoint=" + entrypoint
        + (metadata.isEmpty() ? "" : ", metadata=" + Redaction.metadata(metadata))
        + (runtimeEnv.isEmpty() ? "" : ", runtime_env=" + Redaction.runtimeEnv(runtimeEnv))
        + (startTime == null ? "" : ", start=" + startTime) + (endTime == null ? "" : ", end=" + endTime)
        + (driverExitCode == null ? "" : ", exit=" + driverExitCode) + "}";
  }

  private static String firstLine(String s) {
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl) + " ...";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof JobInfo j && type.equals(j.type) && Objects.equals(submissionId, j.submissionId)
        && Objects.equals(jobId, j.jobId) && status == j.status && message.equals(j.message)
        && Objects.equals(errorType, j.errorType) && entrypoint.equals(j.entrypoint) && metadata.equals(j.metadata)
        && runtimeEnv.equals(j.runtimeEnv) && Objects.equals(startTime, j.startTime)
        && Objects.equals(endTime, j.endTime) && Objects.equals(driverExitCode, j.driverExitCode);
  }

  @Override
  public int hashCode() {
    return Objects.hash(type, submissionId, jobId, status, entrypoint);
  }

  /** Builds a {@link JobInfo} (the client parses them; tests and fakes build them). */
  public static final class Builder {
    private final JobStatus status;
    private String type = SUBMISSION;
    private String submissionId;
    private String jobId;
    private String message;
    private String errorType;
    private String entrypoint;
    private final Map<String, String> metadata = new LinkedHashMap<>();
    private Map<String, Object> runtimeEnv = Map.of();
    private Instant startTime;
    private Instant endTime;
    private Integer driverExitCode;

    private Builder(JobStatus status) {
      this.status = Objects.requireNonNull(status, "status");
    }

    public Builder type(String type) {
      this.type = Objects.requireNonNull(type, "type");
      return this;
    }

    public Builder submissionId(String id) {
      this.submissionId = id;
      return this;
    }

    public Builder jobId(String id) {
      this.jobId = id;
      return this;
    }

    public Builder message(String message) {
      this.message = message;
      return this;
    }

    public Builder errorType(String errorType) {
      this.errorType = errorType;
      return this;
    }

    public Builder entrypoint(String entrypoint) {
      this.entrypoint = entrypoint;
      return this;
    }

    public Builder metadata(String key, String value) {
      metadata.put(Objects.requireNonNull(key, "metadata key"), Objects.requireNonNull(value, "metadata." + key));
      return this;
    }

    public Builder runtimeEnv(Map<String, ?> env) {
      this.runtimeEnv = new LinkedHashMap<>(Objects.requireNonNull(env, "runtime_env"));
      return this;
    }

    public Builder startTime(Instant t) {
      this.startTime = t;
      return this;
    }

    public Builder endTime(Instant t) {
      this.endTime = t;
      return this;
    }

    public Builder driverExitCode(int code) {
      this.driverExitCode = code;
      return this;
    }

    public JobInfo build() {
      if (submissionId == null && jobId == null) {
        throw new IllegalArgumentException("a job has a submission_id or a job_id; neither is set");
      }
      return new JobInfo(this);
    }
  }
}
