package dev.ravel.telemetry.sdk;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.otlp.OtlpProtocol;
import dev.ravel.telemetry.otlp.OtlpSettings;
import io.opentelemetry.exporter.logging.otlp.internal.traces.OtlpStdoutSpanExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporterBuilder;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporter;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporterBuilder;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Builds the span exporters a process uses. */
final class Exporters {
  private Exporters() {}

  /** An OTLP exporter for the resolved settings (TLS when the endpoint is https). */
  static SpanExporter otlp(OtlpSettings s) {
    try {
      if (s.protocol() == OtlpProtocol.GRPC) {
        OtlpGrpcSpanExporterBuilder b = OtlpGrpcSpanExporter.builder()
            .setEndpoint(s.endpoint().toString())
            .setTimeout(s.timeout());
        s.headers().forEach(b::addHeader);
        if (s.gzip()) {
          b.setCompression("gzip");
        }
        if (s.certificate().isPresent()) {
          b.setTrustedCertificates(Files.readAllBytes(s.certificate().get()));
        }
        if (s.clientKey().isPresent()) {
          b.setClientTls(Files.readAllBytes(s.clientKey().get()), Files.readAllBytes(s.clientCertificate().get()));
        }
        return b.build();
      }
      OtlpHttpSpanExporterBuilder b = OtlpHttpSpanExporter.builder()
          .setEndpoint(s.endpoint().toString())
          .setTimeout(s.timeout());
      s.headers().forEach(b::addHeader);
      if (s.gzip()) {
        b.setCompression("gzip");
      }
      if (s.certificate().isPresent()) {
        b.setTrustedCertificates(Files.readAllBytes(s.certificate().get()));
      }
      if (s.clientKey().isPresent()) {
        b.setClientTls(Files.readAllBytes(s.clientKey().get()), Files.readAllBytes(s.clientCertificate().get()));
      }
      return b.build();
    } catch (IOException e) {
      throw new UncheckedIOException("reading OTLP TLS files", e);
    } catch (IllegalArgumentException e) {
      // the SDK rejects what our resolution let through (for example a malformed PEM file)
      throw new ConfigException(OtlpSettings.TRACES_PREFIX + "CERTIFICATE", e.getMessage());
    }
  }

  /**
   * An exporter that appends OTLP JSON Lines to {@code file}: one {@code {"resourceSpans":[...]}} object
   * per line, hex ids and string nanos, the OpenTelemetry file-exporter format.
   */
  static SpanExporter jsonLines(Path file) {
    try {
      Files.createDirectories(file.getParent());
      OutputStream out = Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      return OtlpStdoutSpanExporter.builder().setOutput(out).setWrapperJsonObject(true).build();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write span file " + file, e);
    }
  }
}
