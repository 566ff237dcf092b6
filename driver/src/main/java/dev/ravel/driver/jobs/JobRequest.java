package dev.ravel.driver.jobs;

import dev.ravel.telemetry.config.ConfigException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.regex.Pattern;

/**
 * A Ray job to submit: the body of {@code POST /api/jobs/} (Ray 2.39.0's {@code JobSubmitRequest}):
 * {@code entrypoint}, {@code submission_id}, {@code runtime_env}, {@code metadata},
 * {@code entrypoint_num_cpus}, {@code entrypoint_num_gpus}, {@code entrypoint_memory},
 * {@code entrypoint_resources}. Immutable; {@link Builder#build()} validates every field and a
 * {@link ConfigException} names the offending one ({@link ConfigException#key()} is the JSON field, e.g.
 * {@code runtime_env.env_vars.FOO}).
 *
 * <p>{@code runtime_env.env_vars} and {@code metadata} may hold secrets (OTLP headers, tokens):
 * {@link #toString()} masks every value whose name looks secret ({@code WorkerEnvironment.isSecret}).
 */
public final class JobRequest {
  /** The {@code runtime_env} key of the entrypoint's environment variables. */
  public static final String ENV_VARS = "env_vars";

  private static final Pattern SUBMISSION_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private final String entrypoint;
  private final String submissionId;
  private final Map<String, Object> runtimeEnv;
  private final Map<String, String> metadata;
  private final Double entrypointNumCpus;
  private final Double entrypointNumGpus;
  private final Long entrypointMemory;
  private final Map<String, Double> entrypointResources;

  private JobRequest(Builder b, Map<String, Object> runtimeEnv) {
    this.entrypoint = b.entrypoint;
    this.submissionId = b.submissionId;
    this.runtimeEnv = runtimeEnv;
    this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(b.metadata));
    this.entrypointNumCpus = b.entrypointNumCpus;
    this.entrypointNumGpus = b.entrypointNumGpus;
    this.entrypointMemory = b.entrypointMemory;
    this.entrypointResources = Collections.unmodifiableMap(new LinkedHashMap<>(b.entrypointResources));
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The shell command Ray runs on the head node (with {@code /bin/sh -c}). */
  public String entrypoint() {
    return entrypoint;
  }

  /** The submission id asked for; empty lets Ray generate one ({@code raysubmit_...}). */
  public Optional<String> submissionId() {
    return Optional.ofNullable(submissionId);
  }

  /** The runtime environment (deeply immutable); secret: may hold tokens in {@code env_vars}. */
  public Map<String, Object> runtimeEnv() {
    return runtimeEnv;
  }

  /** {@code runtime_env.env_vars}, empty if none. Secret. */
  @SuppressWarnings("unchecked")
  public Map<String, String> envVars() {
    Object v = runtimeEnv.get(ENV_VARS);
    return v == null ? Map.of() : (Map<String, String>) v;
  }

  public Map<String, String> metadata() {
    return metadata;
  }

  public OptionalDouble entrypointNumCpus() {
    return entrypointNumCpus == null ? OptionalDouble.empty() : OptionalDouble.of(entrypointNumCpus);
  }

  public OptionalDouble entrypointNumGpus() {
    return entrypointNumGpus == null ? OptionalDouble.empty() : OptionalDouble.of(entrypointNumGpus);
  }

  /** Bytes of memory reserved for the entrypoint. */
  public OptionalLong entrypointMemory() {
    return entrypointMemory == null ? OptionalLong.empty() : OptionalLong.of(entrypointMemory);
  }

  public Map<String, Double> entrypointResources() {
    return entrypointResources;
  }

  /** The request body as Jackson writes it (fields that are unset are left out). */
  Json.SubmitBody toBody() {
    return new Json.SubmitBody(entrypoint, submissionId, runtimeEnv.isEmpty() ? null : runtimeEnv,
        metadata.isEmpty() ? null : metadata, entrypointNumCpus, entrypointNumGpus, entrypointMemory,
        entrypointResources.isEmpty() ? null : entrypointResources);
  }

  /** A description safe to log: secret-looking {@code env_vars} and metadata values masked. */
  @Override
  public String toString() {
    return "JobRequest{entrypoint=" + entrypoint + (submissionId == null ? "" : ", submission_id=" + submissionId)
        + (runtimeEnv.isEmpty() ? "" : ", runtime_env=" + Redaction.runtimeEnv(runtimeEnv))
        + (metadata.isEmpty() ? "" : ", metadata=" + Redaction.metadata(metadata))
        + (entrypointNumCpus == null ? "" : ", entrypoint_num_cpus=" + entrypointNumCpus)
        + (entrypointNumGpus == null ? "" : ", entrypoint_num_gpus=" + entrypointNumGpus)
        + (entrypointMemory == null ? "" : ", entrypoint_memory=" + entrypointMemory)
        + (entrypointResources.isEmpty() ? "" : ", entrypoint_resources=" + entrypointResources) + "}";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof JobRequest r && entrypoint.equals(r.entrypoint) && Objects.equals(submissionId, r.submissionId)
        && runtimeEnv.equals(r.runtimeEnv) && metadata.equals(r.metadata)
        && Objects.equals(entrypointNumCpus, r.entrypointNumCpus) && Objects.equals(entrypointNumGpus, r.entrypointNumGpus)
        && Objects.equals(entrypointMemory, r.entrypointMemory) && entrypointResources.equals(r.entrypointResources);
  }

  @Override
  public int hashCode() {
    return Objects.hash(entrypoint, submissionId, runtimeEnv, metadata, entrypointNumCpus, entrypointNumGpus,
        entrypointMemory, entrypointResources);
  }

  /** Builds a {@link JobRequest}; {@link #build()} validates. */
  public static final class Builder {
    private String entrypoint;
    private String submissionId;
    private final Map<String, Object> runtimeEnv = new LinkedHashMap<>();
    private final Map<String, String> envVars = new LinkedHashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();
    private Double entrypointNumCpus;
    private Double entrypointNumGpus;
    private Long entrypointMemory;
    private final Map<String, Double> entrypointResources = new LinkedHashMap<>();

    private Builder() {}

    /** The shell command line, used verbatim. */
    public Builder entrypoint(String commandLine) {
      this.entrypoint = commandLine;
      return this;
    }

    /**
     * The entrypoint as words: one word is used verbatim as the shell command line; several are joined
     * with each word quoted for the shell where needed, so that every word reaches the program as given.
     */
    public Builder command(List<String> words) {
      Objects.requireNonNull(words, "words");
      this.entrypoint = words.size() == 1 ? words.get(0) : Shell.join(words);
      return this;
    }

    /** The submission id (letters, digits, '.', '_', '-'; at most 128); unset lets Ray choose one. */
    public Builder submissionId(String id) {
      this.submissionId = id;
      return this;
    }

    /**
     * The runtime environment (JSON-like values: maps with string keys, lists, strings, numbers, booleans).
     * Its {@code env_vars}, if any, are merged with those given by {@link #envVar}; {@link #envVar} wins.
     */
    public Builder runtimeEnv(Map<String, ?> env) {
      runtimeEnv.clear();
      if (env != null) {
        runtimeEnv.putAll(env);
      }
      return this;
    }

    /** One entry of {@code runtime_env.env_vars}. */
    public Builder envVar(String name, String value) {
      envVars.put(name, value);
      return this;
    }

    /** Entries of {@code runtime_env.env_vars}. */
    public Builder envVars(Map<String, String> vars) {
      envVars.putAll(vars);
      return this;
    }

    public Builder metadata(String key, String value) {
      metadata.put(key, value);
      return this;
    }

    public Builder metadata(Map<String, String> entries) {
      metadata.putAll(entries);
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

    /** Bytes of memory to reserve for the entrypoint. */
    public Builder entrypointMemory(long bytes) {
      this.entrypointMemory = bytes;
      return this;
    }

    public Builder entrypointResource(String name, double quantity) {
      entrypointResources.put(name, quantity);
      return this;
    }

    /** Validates every field; a {@link ConfigException} names the first offending one. */
    public JobRequest build() {
      if (entrypoint == null || entrypoint.isBlank()) {
        throw new ConfigException("entrypoint", "must not be empty");
      }
      if (submissionId != null && !SUBMISSION_ID.matcher(submissionId).matches()) {
        throw new ConfigException("submission_id", "'" + submissionId
            + "' is not a valid submission id (letters, digits, '.', '_', '-'; at most 128; it names a log file and a URL path)");
      }
      Map<String, Object> env = new LinkedHashMap<>();
      for (Map.Entry<String, Object> e : runtimeEnv.entrySet()) {
        if (e.getKey() == null || e.getKey().isEmpty()) {
          throw new ConfigException("runtime_env", "keys must be non-empty strings");
        }
        env.put(e.getKey(), Json.freeze("runtime_env." + e.getKey(), e.getValue()));
      }
      Map<String, String> vars = new LinkedHashMap<>();
      Object given = env.get(ENV_VARS);
      if (given != null) {
        if (!(given instanceof Map<?, ?> m)) {
          throw new ConfigException("runtime_env.env_vars", "must be a mapping of names to strings");
        }
        m.forEach((k, v) -> {
          if (!(v instanceof String s)) {
            throw new ConfigException("runtime_env.env_vars." + k, "must be a string (Ray accepts only strings)");
          }
          vars.put(String.valueOf(k), s);
        });
      }
      vars.putAll(envVars);
      for (Map.Entry<String, String> e : vars.entrySet()) {
        if (e.getKey() == null || !ENV_NAME.matcher(e.getKey()).matches()) {
          throw new ConfigException("runtime_env.env_vars", "'" + e.getKey() + "' is not an environment variable name");
        }
        if (e.getValue() == null) {
          throw new ConfigException("runtime_env.env_vars." + e.getKey(), "must not be null");
        }
      }
      if (!vars.isEmpty()) {
        env.put(ENV_VARS, Collections.unmodifiableMap(vars));
      }
      for (Map.Entry<String, String> e : metadata.entrySet()) {
        if (e.getKey() == null || e.getKey().isEmpty()) {
          throw new ConfigException("metadata", "keys must be non-empty strings");
        }
        if (e.getValue() == null) {
          throw new ConfigException("metadata." + e.getKey(), "must not be null (Ray accepts only strings)");
        }
      }
      nonNegative("entrypoint_num_cpus", entrypointNumCpus);
      nonNegative("entrypoint_num_gpus", entrypointNumGpus);
      if (entrypointMemory != null && entrypointMemory < 0) {
        throw new ConfigException("entrypoint_memory", "must not be negative, got " + entrypointMemory);
      }
      for (Map.Entry<String, Double> e : entrypointResources.entrySet()) {
        if (e.getKey() == null || e.getKey().isBlank()) {
          throw new ConfigException("entrypoint_resources", "resource names must be non-empty");
        }
        nonNegative("entrypoint_resources." + e.getKey(), e.getValue());
      }
      return new JobRequest(this, Collections.unmodifiableMap(env));
    }

    private static void nonNegative(String key, Double v) {
      if (v != null && !(Double.isFinite(v) && v >= 0)) {
        throw new ConfigException(key, "must be a finite number >= 0, got " + v);
      }
    }
  }
}
