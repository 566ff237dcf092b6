package dev.ravel.driver.jobs;

import dev.ravel.telemetry.spans.RavelAttributes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.context.TraceCarrier;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.telemetry.spans.ScopedSpan;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import io.opentelemetry.context.Context;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JobContextTest {
  static final String TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  @TempDir
  Path runs;

  @Test
  void parent_withVariables_isTheirCarrier() {
    TraceCarrier c = JobContext.parent(Map.of(JobContext.TRACEPARENT_ENV, TRACEPARENT,
        JobContext.TRACESTATE_ENV, "vendor=x"));

    assertThat(c.traceparent()).isEqualTo(TRACEPARENT);
    assertThat(c.tracestate()).isEqualTo("vendor=x");
    assertThat(JobContext.present(Map.of(JobContext.TRACEPARENT_ENV, TRACEPARENT))).isTrue();
  }

  @Test
  void parent_withoutVariables_isEmpty() {
    assertThat(JobContext.parent(Map.of())).isEqualTo(TraceCarrier.EMPTY);
    assertThat(JobContext.parent(Map.of(JobContext.TRACEPARENT_ENV, " "))).isEqualTo(TraceCarrier.EMPTY);
    assertThat(JobContext.present(Map.of())).isFalse();
  }

  @Test
  void toEnvironment_thenParent_roundTrips() {
    TraceCarrier c = TraceCarrier.of(TRACEPARENT, "a=b", "");

    assertThat(JobContext.parent(JobContext.toEnvironment(c))).isEqualTo(c);
    assertThat(JobContext.toEnvironment(TraceCarrier.EMPTY)).isEmpty();
  }

  @Test
  void runInJobSpan_withParent_makesJobRunItsChildAndTheParentOfInnerSpans() {
    TelemetryConfig config = TelemetryConfig.builder().runId("job-ctx").runsDir(runs).exporter(ExporterKind.FILE)
        .shutdownTimeout(Duration.ofSeconds(5)).build();
    String submitSpan;
    String traceId;
    try (ProcessTelemetry submitter = ProcessTelemetry.builder(config).role("submitter").start()) {
      Map<String, String> env = new HashMap<>();
      try (ScopedSpan s = submitter.spans().start(SpanGroup.JOB, SpanNames.JOB_SUBMIT, Context.root())) {
        env.putAll(JobContext.toEnvironment(s.carrier()));
        submitSpan = s.spanContext().getSpanId();
        traceId = s.spanContext().getTraceId();
      }
      env.put(JobContext.SUBMISSION_ID_ENV, "job-ctx-abc123");
      try (ProcessTelemetry driver = ProcessTelemetry.builder(config).role("driver").start()) {
        int r = JobContext.runInJobSpan(driver.spans(), env, () -> {
          driver.spans().start(SpanGroup.STEP, SpanNames.GRPO_STEP).close();
          return 7;
        });
        assertThat(r).isEqualTo(7);
      }
    }

    RunTraces traces = RunTraces.readDir(config.runDir());
    SpanRecord run = traces.named(SpanNames.JOB_RUN).get(0);
    assertThat(run.traceId()).isEqualTo(traceId);
    assertThat(run.parentSpanId()).isEqualTo(submitSpan);
    assertThat(run.attributes()).containsEntry(RavelAttributes.JOB_SUBMISSION_ID.getKey(), "job-ctx-abc123");
    assertThat(traces.named(SpanNames.GRPO_STEP).get(0).parentSpanId()).isEqualTo(run.spanId());
  }

  @Test
  void runInJobSpan_bodyThrows_marksTheSpanFailedAndRethrows() {
    TelemetryConfig config = TelemetryConfig.builder().runId("job-err").runsDir(runs).exporter(ExporterKind.FILE)
        .shutdownTimeout(Duration.ofSeconds(5)).build();
    try (ProcessTelemetry driver = ProcessTelemetry.builder(config).role("driver").start()) {
      assertThatThrownBy(() -> JobContext.runInJobSpan(driver.spans(),
          Map.of(JobContext.TRACEPARENT_ENV, TRACEPARENT), () -> {
            throw new IllegalStateException("boom");
          })).hasMessage("boom");
    }

    SpanRecord run = RunTraces.readDir(config.runDir()).named(SpanNames.JOB_RUN).get(0);
    assertThat(run.isError()).isTrue();
    assertThat(run.parentSpanId()).isEqualTo("b7ad6b7169203331");
  }

  @Test
  void runInJobSpan_withoutParent_runsTheBodyWithoutASpan() {
    TelemetryConfig config = TelemetryConfig.builder().runId("job-none").runsDir(runs).exporter(ExporterKind.FILE)
        .shutdownTimeout(Duration.ofSeconds(5)).build();
    try (ProcessTelemetry driver = ProcessTelemetry.builder(config).role("driver").start()) {
      assertThat(JobContext.runInJobSpan(driver.spans(), Map.of(), () -> "done")).isEqualTo("done");
    }

    assertThat(RunTraces.readDir(config.runDir()).named(SpanNames.JOB_RUN)).isEmpty();
  }
}
