package dev.ravel.telemetry.sdk;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.otlp.OtlpProtocol;
import dev.ravel.telemetry.otlp.OtlpSettings;
import io.opentelemetry.exporter.otlp.http.metrics.OtlpHttpMetricExporter;
import io.opentelemetry.exporter.otlp.http.metrics.OtlpHttpMetricExporterBuilder;
import io.opentelemetry.exporter.otlp.metrics.OtlpGrpcMetricExporter;
import io.opentelemetry.exporter.otlp.metrics.OtlpGrpcMetricExporterBuilder;
import io.opentelemetry.sdk.metrics.export.MetricExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporterBuilder;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporter;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporterBuilder;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/** Builds the span exporters a process uses. */
final class Exporters {
  private Exporters() {}

  /** An OTLP exporter for the resolved settings (TLS when the endpoint is https). */
  static SpanExporter otlp(OtlpSettings s) {
    try {
      if (s.protocol() == OtlpProtocol.GRPC) {
        OtlpGrpcSpanExporterBuilder b = OtlpGrpcSpanExporter.builder()
            .setEndpoint(s.endpoint().toString()).setTimeout(s.timeout());
        configure(s, b::addHeader, b::setCompression, b::setTrustedCertificates, b::setClientTls);
        return b.build();
      }
      OtlpHttpSpanExporterBuilder b = OtlpHttpSpanExporter.builder()
          .setEndpoint(s.endpoint().toString()).setTimeout(s.timeout());
      configure(s, b::addHeader, b::setCompression, b::setTrustedCertificates, b::setClientTls);
      return b.build();
    } catch (IllegalArgumentException e) {
      // the SDK rejects what our resolution let through (for example a malformed PEM file)
      throw new ConfigException(OtlpSettings.TRACES_PREFIX + "CERTIFICATE", e.getMessage());
    }
  }

  /** An OTLP metric exporter for the resolved metrics settings ({@link OtlpSettings#metrics()}). */
  static MetricExporter otlpMetrics(OtlpSettings s) {
    try {
      if (s.protocol() == OtlpProtocol.GRPC) {
        OtlpGrpcMetricExporterBuilder b = OtlpGrpcMetricExporter.builder()
            .setEndpoint(s.endpoint().toString()).setTimeout(s.timeout());
        configure(s, b::addHeader, b::setCompression, b::setTrustedCertificates, b::setClientTls);
        return b.build();
      }
      OtlpHttpMetricExporterBuilder b = OtlpHttpMetricExporter.builder()
          .setEndpoint(s.endpoint().toString()).setTimeout(s.timeout());
      configure(s, b::addHeader, b::setCompression, b::setTrustedCertificates, b::setClientTls);
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new ConfigException(OtlpSettings.METRICS_PREFIX + "CERTIFICATE", e.getMessage());
    }
  }

  /** Headers, compression and TLS, the same for every OTLP exporter builder. */
  private static void configure(OtlpSettings s, BiConsumer<String, String> header, Consumer<String> compression,
      Consumer<byte[]> trusted, BiConsumer<byte[], byte[]> clientTls) {
    try {
      s.headers().forEach(header);
      if (s.gzip()) {
        compression.accept("gzip");
      }
      if (s.certificate().isPresent()) {
        trusted.accept(Files.readAllBytes(s.certificate().get()));
      }
      if (s.clientKey().isPresent()) {
        clientTls.accept(Files.readAllBytes(s.clientKey().get()), Files.readAllBytes(s.clientCertificate().get()));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading OTLP TLS files", e);
    }
  }

  /** Appends OTLP JSON Lines metrics ({@code {"resourceMetrics":[...]}} per line) to {@code file}. */
  static MetricExporter jsonLinesMetrics(Path file) {
    return new JsonLinesMetricExporter(JsonLinesFile.open(file, "metrics"));
  }

  /**
   * An exporter that appends OTLP JSON Lines to {@code file}: one {@code {"resourceSpans":[...]}} object
   * per line, hex ids and string nanos, the OpenTelemetry file-exporter format.
   */
  static SpanExporter jsonLines(Path file) {
    return new JsonLinesSpanExporter(JsonLinesFile.open(file, "span"));
  }
}
