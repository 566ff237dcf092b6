package dev.ravel.driver.jobs;

import java.util.Arrays;
import java.util.stream.Collectors;

/** The status of a Ray job, as the Jobs API of Ray 2.39.0 reports it ({@code JobStatus} in Ray's common.py). */
public enum JobStatus {
  /** Not started yet (waiting for resources or its runtime environment). */
  PENDING,
  /** The entrypoint is running. */
  RUNNING,
  /** Stopped on request. Terminal. */
  STOPPED,
  /** The entrypoint exited with 0. Terminal. */
  SUCCEEDED,
  /** The entrypoint exited non-zero or could not start. Terminal. */
  FAILED;

  /** Whether the job can no longer change status. */
  public boolean isTerminal() {
    return this == STOPPED || this == SUCCEEDED || this == FAILED;
  }

  /** Parses Ray's status string; an unknown one is an error that names it. */
  public static JobStatus parse(String value) {
    for (JobStatus s : values()) {
      if (s.name().equals(value)) {
        return s;
      }
    }
    throw new JobsException("unknown Ray job status '" + value + "' (known: "
        + Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", ")) + ")");
  }
}
