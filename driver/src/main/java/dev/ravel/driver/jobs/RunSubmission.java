package dev.ravel.driver.jobs;

import dev.ravel.driver.config.Keys;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.config.RunConfig;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.env.WorkerEnvironment;
import dev.ravel.driver.trackers.Trackers;
import dev.ravel.telemetry.otlp.OtlpSettings;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import io.opentelemetry.context.Context;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A GRPO run submitted as a Ray job: the job's entrypoint runs this checkout's
 * {@code bin/ravel run <config> <overrides> telemetry.run_id=<id>} (absolute paths) on the head node, where
 * its driver joins the cluster through the {@code RAY_ADDRESS} that Ray sets for every job. So the head must
 * see this checkout, the config and the runs folder at the same paths (a local head, or a shared file system).
 *
 * <p>The job's {@code runtime_env.env_vars} are the run's worker environment ({@link WorkerEnvironment}: the
 * telemetry settings as {@code RAVEL_TELEMETRY_*}, which also pin the run id and the runs folder; the
 * resolved OTLP settings as {@code RAVEL_OTLP_*}, which the job's driver uses instead of resolving its own,
 * with the headers in an owner-only file rather than as a value; trace-enabling {@code OTEL_*} masked
 * unless engine tracing is on), plus {@code RAVEL_RAY_VENV}, {@code RAVEL_RAY_VERSION} (and {@code RAVEL_RAY_JAR} when set) and {@code JAVA_HOME} for {@code bin/ravel}; the submission id; and the
 * submitter's {@code rl.job.submit} span as {@code RAVEL_PARENT_TRACEPARENT}/{@code RAVEL_PARENT_TRACESTATE}
 * ({@link JobContext}); with {@code telemetry.trackers} listing {@code mlflow}, the submitter's
 * {@code MLFLOW_TRACKING_URI} and {@code MLFLOW_EXPERIMENT_NAME} (never its MLflow credentials). The job's metadata
 * holds {@code rl.run.id}; the submission id is
 * {@code <run id>-<6 hex>} unless one is given.
 *
 * <p>{@link #submit(JobsClient)} opens {@code rl.job.submit} (group JOB) in the submitter's own process
 * telemetry (role {@code submitter}, files under the run's folder), submits, and flushes.
 */
public final class RunSubmission {
  /** The metadata key of the run id. */
  public static final String RUN_ID_METADATA = RavelAttributes.RUN_ID.getKey();

  private final RunConfig config;
  private final Path configFile;
  private final List<String> overrides;
  private final Map<String, String> env;
  private final OtlpSettings otlp;
  private final WorkerEnvironment workerEnv;
  private final RayHome home;
  private final Path ravel;
  private final String submissionId;
  private final Map<String, String> metadata;
  private final Map<String, String> extraEnv;
  private final Double entrypointNumCpus;
  private final Double entrypointNumGpus;

  private RunSubmission(Builder b) {
    this.configFile = b.configFile.toAbsolutePath().normalize();
    this.overrides = List.copyOf(b.overrides);
    this.env = Map.copyOf(b.env);
    this.config = RunConfig.load(configFile, overrides, env);
    this.otlp = OtlpSettings.resolve(env);
    this.workerEnv = WorkerEnvironment.of(config.telemetry(), otlp, env);
    this.home = b.home != null ? b.home : RayHome.locate(env);
    this.ravel = home.ravelHome().resolve("bin").resolve("ravel");
    if (!Files.isExecutable(ravel)) {
      throw new IllegalStateException("no executable " + ravel + ": run 'ravel submit run' from a Ravel checkout"
          + " (or set RAVEL_HOME to one)");
    }
    String runId = config.telemetry().runId();
    this.submissionId = b.submissionId != null ? b.submissionId
        : runId.substring(0, Math.min(runId.length(), 120)) + "-"
            + String.format("%06x", ThreadLocalRandom.current().nextInt(1 << 24));
    this.metadata = new LinkedHashMap<>(b.metadata);
    this.extraEnv = new LinkedHashMap<>(b.extraEnv);
    this.entrypointNumCpus = b.entrypointNumCpus;
    this.entrypointNumGpus = b.entrypointNumGpus;
    Map<String, String> jobEnv = new LinkedHashMap<>(env);
    jobEnv.putAll(extraEnv);
    Trackers.checkMlflow(config.telemetry(), jobEnv); // the job's MLFLOW_TRACKING_URI, before it is submitted
    if (config.telemetry().trackers().contains(dev.ravel.telemetry.config.TrackerKind.MLFLOW)) {
      List<String> held = java.util.stream.Stream.of("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME",
          "MLFLOW_TRACKING_PASSWORD").filter(jobEnv::containsKey).toList();
      if (!held.isEmpty()) { // the names only: their values never leave this process
        org.slf4j.LoggerFactory.getLogger(RunSubmission.class).warn("{} set here do not travel with the job: the"
            + " cluster's own environment must give them, or the job's MLflow calls are refused", held);
      }
    }
  }

  /** Starts describing the submission of the run that {@code configFile} (YAML) describes. */
  public static Builder builder(Path configFile) {
    return new Builder(configFile);
  }

  /** The run's config, loaded (and validated) here, before anything is submitted. */
  public RunConfig config() {
    return config;
  }

  public String runId() {
    return config.telemetry().runId();
  }

  public String submissionId() {
    return submissionId;
  }

  /** The words of the job's entrypoint. */
  public List<String> command() {
    List<String> argv = new ArrayList<>();
    argv.add(ravel.toString());
    argv.add("run");
    argv.add(configFile.toString());
    argv.addAll(overrides);
    if (!config.get(Keys.ADDRESS).isEmpty()) {
      argv.add(Keys.ADDRESS.dotted() + "="); // a job's driver joins the cluster it was submitted to (RAY_ADDRESS)
    }
    argv.add("telemetry.run_id=" + runId());
    return argv;
  }

  /** The job request, with {@code parent} as the job's trace parent (may be {@link TraceCarrier#EMPTY}). */
  public JobRequest request(TraceCarrier parent) {
    // the job's driver reads the resolved OTLP settings from RAVEL_OTLP_*, the headers from their file
    workerEnv.writeSecretFiles();
    Map<String, String> vars = new LinkedHashMap<>(workerEnv.variables());
    // the job's bin/ravel runs on the same Ray as this submitter's (same release, virtualenv and jar)
    vars.put(RayHome.VENV_ENV, home.venv().toString());
    vars.put(RayHome.VERSION_ENV, home.version());
    home.jarOverride().ifPresent(j -> vars.put(RayHome.JAR_ENV, j.toString()));
    vars.put("JAVA_HOME", System.getProperty("java.home"));
    vars.put(JobContext.SUBMISSION_ID_ENV, submissionId);
    vars.putAll(JobContext.toEnvironment(parent));
    if (config.telemetry().trackers().contains(dev.ravel.telemetry.config.TrackerKind.MLFLOW)) {
      // the job's driver sends the steps to the same tracking server; credentials are secrets and do not travel
      // (Ray keeps a job's environment and serves it back)
      for (String name : Trackers.FORWARDED_TO_JOBS) {
        String v = env.getOrDefault(name, "");
        if (!v.isBlank() && !extraEnv.containsKey(name)) {
          vars.put(name, v);
        }
      }
    }
    for (Map.Entry<String, String> e : extraEnv.entrySet()) {
      if (vars.containsKey(e.getKey()) || e.getKey().equals(JobContext.TRACEPARENT_ENV)
          || e.getKey().equals(JobContext.TRACESTATE_ENV)) {
        throw new ConfigException("runtime_env.env_vars." + e.getKey(),
            "is set by Ravel for a submitted run and cannot be given");
      }
      vars.put(e.getKey(), e.getValue());
    }
    JobRequest.Builder b = JobRequest.builder().command(command()).submissionId(submissionId).envVars(vars)
        .metadata(metadata).metadata(RUN_ID_METADATA, runId()).metadata(RavelAttributes.ALGORITHM_MODE.getKey(), config.mode().configName());
    if (entrypointNumCpus != null) {
      b.entrypointNumCpus(entrypointNumCpus);
    }
    if (entrypointNumGpus != null) {
      b.entrypointNumGpus(entrypointNumGpus);
    }
    return b.build();
  }

  /**
   * Submits the run inside the submitter's {@code rl.job.submit} span and flushes the submitter's spans
   * (bounded by {@code telemetry.shutdown_timeout_ms}) before returning.
   */
  public Result submit(JobsClient client) {
    Objects.requireNonNull(client, "client");
    try (ProcessTelemetry telemetry = ProcessTelemetry.builder(config.telemetry()).role("submitter").otlp(otlp)
        .start()) {
      try (ScopedSpan s = telemetry.spans().start(SpanGroup.JOB, SpanNames.JOB_SUBMIT, Context.root())) {
        s.set(RavelAttributes.JOB_SUBMISSION_ID, submissionId)
            .set(RavelAttributes.RAY_DASHBOARD_URL, client.baseUrl().toString());
        try {
          JobSubmission sub = client.submit(request(s.carrier()));
          return new Result(runId(), sub.submissionId(), config.telemetry().runDir(),
              s.isRecording() ? s.spanContext().getTraceId() : "");
        } catch (RuntimeException e) {
          s.error(e);
          throw e;
        }
      }
    }
  }

  /**
   * A submitted run.
   *
   * @param runDir where the run's span files go ({@code runs/<run-id>/})
   * @param traceId the trace of {@code rl.job.submit} (and of the job's {@code rl.job.run}); empty when the
   *     JOB span group is off
   */
  public record Result(String runId, String submissionId, Path runDir, String traceId) {}

  /** Options of a {@link RunSubmission}. */
  public static final class Builder {
    private final Path configFile;
    private List<String> overrides = List.of();
    private Map<String, String> env = System.getenv();
    private RayHome home;
    private String submissionId;
    private final Map<String, String> metadata = new LinkedHashMap<>();
    private final Map<String, String> extraEnv = new LinkedHashMap<>();
    private Double entrypointNumCpus;
    private Double entrypointNumGpus;

    private Builder(Path configFile) {
      this.configFile = Objects.requireNonNull(configFile, "configFile");
    }

    /** Config overrides ({@code section.key=value}), passed to the job's {@code ravel run} as given. */
    public Builder overrides(List<String> overrides) {
      this.overrides = List.copyOf(overrides);
      return this;
    }

    /** The submitter's environment: OTLP settings, {@code RAVEL_TELEMETRY_*}, pass-through variables. */
    public Builder env(Map<String, String> env) {
      this.env = Map.copyOf(env);
      return this;
    }

    /** Where Ray's virtualenv and this checkout are (default: {@link RayHome#locate(Map)}). */
    public Builder home(RayHome home) {
      this.home = home;
      return this;
    }

    /** The submission id (default: the run id and 6 random hex digits). */
    public Builder submissionId(String id) {
      this.submissionId = id;
      return this;
    }

    /** Extra job metadata ({@code rl.run.id} is always set). */
    public Builder metadata(String key, String value) {
      metadata.put(key, value);
      return this;
    }

    /** An extra environment variable of the job; one that Ravel sets is an error. */
    public Builder envVar(String name, String value) {
      extraEnv.put(name, value);
      return this;
    }

    public Builder entrypointNumCpus(double cpus) {
      this.entrypointNumCpus = cpus;
      return this;
    }

    public Builder entrypointNumGpus(double gpus) {
      this.entrypointNumGpus = gpus;
      return this;
    }

    /** Loads and validates the config (fails fast, naming the key) and locates {@code bin/ravel}. */
    public RunSubmission build() {
      return new RunSubmission(this);
    }
  }
}
