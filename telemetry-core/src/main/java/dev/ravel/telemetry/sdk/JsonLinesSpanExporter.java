package dev.ravel.telemetry.sdk;

import io.opentelemetry.exporter.internal.otlp.traces.TraceRequestMarshaler;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;

/** Spans as OTLP JSON Lines: one {@code {"resourceSpans":[...]}} per export. */
final class JsonLinesSpanExporter implements SpanExporter {
  private final JsonLinesFile file;

  JsonLinesSpanExporter(JsonLinesFile file) {
    this.file = file;
  }

  @Override
  public CompletableResultCode export(Collection<SpanData> spans) {
    return spans.isEmpty() ? CompletableResultCode.ofSuccess() : file.append(TraceRequestMarshaler.create(spans));
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
    return "JsonLinesSpanExporter{" + file.path() + "}";
  }
}
