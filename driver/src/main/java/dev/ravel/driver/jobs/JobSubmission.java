package dev.ravel.driver.jobs;

import java.util.Objects;

/**
 * What the dashboard answered to a submission: the submission id that names the job in every later call,
 * and Ray's (deprecated) {@code job_id} field, which 2.39.0 sets to the same value.
 */
public record JobSubmission(String submissionId, String jobId) {
  public JobSubmission {
    Objects.requireNonNull(submissionId, "submissionId");
    jobId = jobId == null ? submissionId : jobId;
  }
}
