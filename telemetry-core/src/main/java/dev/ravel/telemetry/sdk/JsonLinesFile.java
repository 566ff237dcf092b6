package dev.ravel.telemetry.sdk;

import io.opentelemetry.exporter.internal.marshal.Marshaler;
import io.opentelemetry.sdk.common.CompletableResultCode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An append-only OTLP JSON Lines file: each export is one {@code ExportTraceServiceRequest} or
 * {@code ExportMetricsServiceRequest} in OTLP/JSON (hex ids, lowerCamelCase fields) on one line, written by
 * the SDK's own marshaler and appended with a single write, so a reader never sees half a line from a
 * finished export. The format of the OpenTelemetry Collector's {@code otlpjsonfile} receiver.
 */
final class JsonLinesFile {
  private static final Logger LOG = LoggerFactory.getLogger(JsonLinesFile.class);

  private final Path path;
  private final OutputStream out;
  private boolean closed;
  private boolean warned;

  private JsonLinesFile(Path path, OutputStream out) {
    this.path = path;
    this.out = out;
  }

  /** Opens {@code path} for appending, creating it and its folder; fails at once when it cannot. */
  static JsonLinesFile open(Path path, String what) {
    try {
      Files.createDirectories(path.getParent());
      return new JsonLinesFile(path, Files.newOutputStream(path, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + what + " file " + path, e);
    }
  }

  Path path() {
    return path;
  }

  /** Appends one request; a failure is the export's failure (counted by the caller), logged once. */
  synchronized CompletableResultCode append(Marshaler request) {
    if (closed) {
      return CompletableResultCode.ofFailure();
    }
    try {
      ByteArrayOutputStream line = new ByteArrayOutputStream(8192);
      request.writeJsonTo(line);
      line.write('\n');
      line.writeTo(out);
      out.flush();
      return CompletableResultCode.ofSuccess();
    } catch (IOException | RuntimeException e) {
      if (!warned) {
        warned = true;
        LOG.warn("cannot append to {}: {}", path, e.toString());
      }
      return CompletableResultCode.ofExceptionalFailure(e);
    }
  }

  synchronized CompletableResultCode flush() {
    try {
      if (!closed) {
        out.flush();
      }
      return CompletableResultCode.ofSuccess();
    } catch (IOException e) {
      return CompletableResultCode.ofExceptionalFailure(e);
    }
  }

  synchronized CompletableResultCode close() {
    if (closed) {
      return CompletableResultCode.ofSuccess();
    }
    closed = true;
    try {
      out.close();
      return CompletableResultCode.ofSuccess();
    } catch (IOException e) {
      return CompletableResultCode.ofExceptionalFailure(e);
    }
  }
}
