package dev.ravel.telemetry.sdk;

import io.opentelemetry.exporter.internal.otlp.metrics.MetricsRequestMarshaler;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.export.MetricExporter;
import java.util.Collection;

/** Metrics as OTLP JSON Lines: one {@code {"resourceMetrics":[...]}} per export, cumulative. */
final class JsonLinesMetricExporter implements MetricExporter {
  private final JsonLinesFile file;

  JsonLinesMetricExporter(JsonLinesFile file) {
    this.file = file;
  }

  @Override
  public AggregationTemporality getAggregationTemporality(InstrumentType instrumentType) {
    return AggregationTemporality.CUMULATIVE;
  }

  @Override
  public CompletableResultCode export(Collection<MetricData> metrics) {
    return metrics.isEmpty() ? CompletableResultCode.ofSuccess() : file.append(MetricsRequestMarshaler.create(metrics));
  }

  @Override
  public CompletableResultCode flush() {
    return file.flush();
  }

  @Override
  public CompletableResultCode shutdown() {
    return file.close();
  }

  @Override
  public String toString() {
    return "JsonLinesMetricExporter{" + file.path() + "}";
  }
}
