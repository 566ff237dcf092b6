package dev.ravel.telemetry.otlp;

/** The OTLP transports Ravel exports over. */
public enum OtlpProtocol {
  GRPC("grpc"),
  HTTP_PROTOBUF("http/protobuf");

  private final String value;

  OtlpProtocol(String value) {
    this.value = value;
  }

  /** The spelling used by {@code OTEL_EXPORTER_OTLP_PROTOCOL}. */
  public String value() {
    return value;
  }
}
