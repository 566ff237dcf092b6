package dev.ravel.telemetry.otlp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.ravel.telemetry.config.ConfigException;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

final class OtlpSettingsTest {
  private static final String SECRET = "s3cr3t-token";

  @TempDir
  Path tmp;

  // ---------------------------------------------------------------- defaults

  @Test
  void resolve_emptyEnvironmentDefaultsToGrpcOnLocalhost4317() {
    OtlpSettings s = OtlpSettings.resolve(Map.of());

    assertThat(s.protocol()).isEqualTo(OtlpProtocol.GRPC);
    assertThat(s.endpoint()).isEqualTo(URI.create("http://127.0.0.1:4317"));
    assertThat(s.endpointConfigured()).isFalse();
    assertThat(s.headers()).isEmpty();
    assertThat(s.timeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(s.gzip()).isFalse();
    assertThat(s.tls()).isFalse();
    assertThat(s.certificate()).isEmpty();
    assertThat(s.clientKey()).isEmpty();
    assertThat(s.clientCertificate()).isEmpty();
  }

  @Test
  void resolve_httpProtobufWithoutEndpointDefaultsToLocalhost4318V1Traces() {
    OtlpSettings s = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"));

    assertThat(s.protocol()).isEqualTo(OtlpProtocol.HTTP_PROTOBUF);
    assertThat(s.endpoint()).isEqualTo(URI.create("http://127.0.0.1:4318/v1/traces"));
    assertThat(s.endpointConfigured()).isFalse();
  }

  @Test
  void resolve_emptyProtocolMeansDefaultGrpc() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "",
        "OTEL_EXPORTER_OTLP_PROTOCOL", ""));

    assertThat(s.protocol()).isEqualTo(OtlpProtocol.GRPC);
    assertThat(s.endpoint()).isEqualTo(URI.create("http://127.0.0.1:4317"));
  }

  @Test
  void resolve_protocolIsCaseInsensitiveAndTrimmed() {
    OtlpSettings s = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", " HTTP/Protobuf "));

    assertThat(s.protocol()).isEqualTo(OtlpProtocol.HTTP_PROTOBUF);
  }

  // ---------------------------------------------------------------- precedence

  @Test
  void resolve_tracesProtocolBeatsGenericProtocol() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"));

    assertThat(s.protocol()).isEqualTo(OtlpProtocol.HTTP_PROTOBUF);
  }

  @Test
  void resolve_tracesEndpointBeatsGenericEndpoint() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4317",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4317"));

    assertThat(s.endpoint()).isEqualTo(URI.create("http://traces:4317"));
    assertThat(s.endpointConfigured()).isTrue();
  }

  @Test
  void resolve_tracesHeadersBeatGenericHeadersAsAWhole() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-a=traces",
        "OTEL_EXPORTER_OTLP_HEADERS", "x-a=generic,x-b=generic"));

    assertThat(s.headers()).containsExactly(Map.entry("x-a", "traces"));
  }

  @Test
  void resolve_tracesTimeoutBeatsGenericTimeout() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2500",
        "OTEL_EXPORTER_OTLP_TIMEOUT", "9000"));

    assertThat(s.timeout()).isEqualTo(Duration.ofMillis(2500));
  }

  @Test
  void resolve_genericValuesApplyWhenNoTracesValueIsSet() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4317",
        "OTEL_EXPORTER_OTLP_HEADERS", "x-a=1",
        "OTEL_EXPORTER_OTLP_TIMEOUT", "1234",
        "OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"));

    assertThat(s.endpoint()).isEqualTo(URI.create("http://generic:4317"));
    assertThat(s.headers()).containsExactly(Map.entry("x-a", "1"));
    assertThat(s.timeout()).isEqualTo(Duration.ofMillis(1234));
    assertThat(s.gzip()).isTrue();
  }

  @Test
  void resolve_emptyTracesEndpointFallsBackToGenericEndpoint() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4317"));

    assertThat(s.endpoint()).isEqualTo(URI.create("http://generic:4317"));
    assertThat(s.endpointConfigured()).isTrue();
  }

  @Test
  void resolve_emptyTracesEndpointWithNoGenericEndpointUsesDefault() {
    OtlpSettings s = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""));

    assertThat(s.endpoint()).isEqualTo(URI.create("http://127.0.0.1:4317"));
    assertThat(s.endpointConfigured()).isFalse();
  }

  @Test
  void resolve_emptyTracesTimeoutFallsBackToGenericTimeout() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "",
        "OTEL_EXPORTER_OTLP_TIMEOUT", "700"));

    assertThat(s.timeout()).isEqualTo(Duration.ofMillis(700));
  }

  // ---------------------------------------------------------------- v1/traces

  @ParameterizedTest
  @CsvSource({
      "http://collector:4318,   http://collector:4318/v1/traces",
      "http://collector:4318/,  http://collector:4318/v1/traces",
      "https://collector/otlp,  https://collector/otlp/v1/traces",
      "https://collector/otlp/, https://collector/otlp/v1/traces"
  })
  void resolve_genericHttpEndpointGetsV1TracesAppended(String configured, String expected) {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT", configured));

    assertThat(s.endpoint()).isEqualTo(URI.create(expected));
  }

  @Test
  void resolve_genericEndpointWithTracesSpecificHttpProtocolGetsV1TracesAppended() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"));

    assertThat(s.endpoint()).isEqualTo(URI.create("http://collector:4318/v1/traces"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"http://collector:4318", "http://collector:4318/", "http://collector:4318/custom/path"})
  void resolve_tracesHttpEndpointIsUsedVerbatim(String configured) {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", configured));

    assertThat(s.endpoint()).isEqualTo(URI.create(configured));
    assertThat(s.endpoint().getPath()).doesNotContain("v1/traces");
  }

  @ParameterizedTest
  @ValueSource(strings = {"http://collector:4317", "http://collector:4317/"})
  void resolve_genericGrpcEndpointGetsNoV1Traces(String configured) {
    OtlpSettings s = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", configured));

    assertThat(s.protocol()).isEqualTo(OtlpProtocol.GRPC);
    assertThat(s.endpoint()).isEqualTo(URI.create(configured));
  }

  @Test
  void resolve_httpsEndpointTurnsOnTls() {
    OtlpSettings s = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317"));

    assertThat(s.tls()).isTrue();
  }

  // ---------------------------------------------------------------- headers

  @Test
  void resolve_headerValuesAreUrlDecodedAndNamesLowerCased() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20" + SECRET + " , x-tenant=a%2Cb%3Dc,,"));

    assertThat(s.headers()).containsExactly(
        Map.entry("authorization", "Bearer " + SECRET),
        Map.entry("x-tenant", "a,b=c"));
  }

  @Test
  void resolve_headerValueMayContainEqualsSigns() {
    OtlpSettings s = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_HEADERS", "x-key=abc=="));

    assertThat(s.headers()).containsExactly(Map.entry("x-key", "abc=="));
  }

  @Test
  void toString_neverContainsHeaderValues() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20" + SECRET));

    assertThat(s.toString())
        .contains("authorization")
        .doesNotContain(SECRET)
        .doesNotContain("Bearer");
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "authorization",                       // no '='
      "=Bearer%20" + SECRET,                 // empty name
      "x-ok=1,Bearer " + SECRET,             // second entry without '='
      "bad name=" + SECRET,                  // invalid header name
      "authorization=Bearer%2" + SECRET      // malformed %-escape
  })
  void resolve_malformedHeadersFailNamingTheVariableWithoutTheSecret(String headers) {
    ConfigException e = catchThrowableOfType(ConfigException.class,
        () -> OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_TRACES_HEADERS", headers)));

    assertThat(e).isNotNull();
    assertThat(e.key()).isEqualTo("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
    assertThat(e.getMessage()).startsWith("OTEL_EXPORTER_OTLP_TRACES_HEADERS").doesNotContain(SECRET);
  }

  @Test
  void resolve_malformedGenericHeadersNameTheGenericVariable() {
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_HEADERS", "novalue"), "OTEL_EXPORTER_OTLP_HEADERS");
  }

  // ---------------------------------------------------------------- invalid values

  @Test
  void resolve_unknownProtocolFailsNamingTheVariable() {
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift"), "OTEL_EXPORTER_OTLP_PROTOCOL");
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "udp"), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
  }

  @Test
  void resolve_httpJsonIsRejectedNamingTheVariable() {
    ConfigException e = assertConfigError(
        Map.of("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");

    assertThat(e.getMessage()).contains("http/json");
  }

  @ParameterizedTest
  @CsvSource({
      "OTEL_EXPORTER_OTLP_ENDPOINT,        collector:4317",
      "OTEL_EXPORTER_OTLP_ENDPOINT,        127.0.0.1:4317",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, collector",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, ftp://collector:4317",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, grpc://collector:4317",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, http://",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, http:///v1/traces",
      "OTEL_EXPORTER_OTLP_ENDPOINT,        http://user:pass@collector:4317",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, https://token@collector:4318",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, http://collector:4317/a b"
  })
  void resolve_invalidEndpointFailsNamingTheVariable(String variable, String value) {
    assertConfigError(Map.of(variable, value), variable);
  }

  @Test
  void resolve_invalidGenericHttpEndpointFailsNamingTheGenericVariable() {
    assertConfigError(Map.of(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://collector"), "OTEL_EXPORTER_OTLP_ENDPOINT");
  }

  @Test
  void resolve_credentialsInEndpointAreNotEchoed() {
    ConfigException e = assertConfigError(
        Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://user:" + SECRET + "@collector:4317"),
        "OTEL_EXPORTER_OTLP_ENDPOINT");

    assertThat(e.getMessage()).doesNotContain(SECRET);
  }

  @ParameterizedTest
  @ValueSource(strings = {"ten", "1.5", "-1", "10s"})
  void resolve_invalidTimeoutFailsNamingTheVariable(String value) {
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", value), "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT");
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_TIMEOUT", value), "OTEL_EXPORTER_OTLP_TIMEOUT");
  }

  @Test
  void resolve_zeroTimeoutIsAccepted() {
    assertThat(OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_TIMEOUT", "0")).timeout()).isZero();
  }

  @Test
  void resolve_unknownCompressionFailsNamingTheVariable() {
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"), "OTEL_EXPORTER_OTLP_COMPRESSION");
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "deflate"),
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION");
  }

  @Test
  void resolve_compressionNoneMeansNoGzip() {
    assertThat(OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none")).gzip()).isFalse();
    assertThat(OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "GZIP")).gzip()).isTrue();
  }

  // ---------------------------------------------------------------- TLS files

  @Test
  void resolve_certificateWithHttpsEndpointIsAcceptedAsAbsolutePath() throws IOException {
    Path ca = pem("ca.pem");

    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://collector:4317",
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", ca.toString()));

    assertThat(s.certificate()).contains(ca.toAbsolutePath());
    assertThat(s.tls()).isTrue();
  }

  @Test
  void resolve_missingCertificateFileFailsNamingTheVariable() {
    String missing = tmp.resolve("nope.pem").toString();

    assertConfigError(Map.of(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317",
        "OTEL_EXPORTER_OTLP_CERTIFICATE", missing), "OTEL_EXPORTER_OTLP_CERTIFICATE");
    assertConfigError(Map.of(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317",
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", missing), "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE");
  }

  @Test
  void resolve_certificateThatIsADirectoryFailsNamingTheVariable() {
    assertConfigError(Map.of(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317",
        "OTEL_EXPORTER_OTLP_CERTIFICATE", tmp.toString()), "OTEL_EXPORTER_OTLP_CERTIFICATE");
  }

  @Test
  void resolve_clientKeyWithoutClientCertificateFailsNamingTheMissingVariable() throws IOException {
    Path key = pem("client.key");

    assertConfigError(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://collector:4317",
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", key.toString()), "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE");
  }

  @Test
  void resolve_clientCertificateWithoutClientKeyFailsNamingTheMissingVariable() throws IOException {
    Path cert = pem("client.pem");

    assertConfigError(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://collector:4317",
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", cert.toString()), "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY");
  }

  @Test
  void resolve_certificateWithHttpEndpointFailsNamingTheEndpointVariable() throws IOException {
    Path ca = pem("ca.pem");

    assertConfigError(Map.of(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317",
        "OTEL_EXPORTER_OTLP_CERTIFICATE", ca.toString()), "OTEL_EXPORTER_OTLP_ENDPOINT");
    assertConfigError(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4317",
        "OTEL_EXPORTER_OTLP_CERTIFICATE", ca.toString()), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  }

  @Test
  void resolve_certificateWithDefaultEndpointFailsNamingTheTracesEndpoint() throws IOException {
    Path ca = pem("ca.pem");

    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.toString()),
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  }

  // ---------------------------------------------------------------- worker round trip

  @Test
  void fromWorkerEnvironment_roundTripsFullySpecifiedSettings() throws IOException {
    Path ca = pem("ca.pem");
    Path key = pem("client.key");
    Path cert = pem("client.pem");
    OtlpSettings driver = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318/otlp",
        "OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20" + SECRET + ",x-tenant=a%2Cb%2Bc",
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", ca.toString(),
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", key.toString(),
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", cert.toString(),
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "3210",
        "OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"));

    OtlpSettings worker = OtlpSettings.fromWorkerEnvironment(driver.toWorkerEnvironment());

    assertThat(worker).isEqualTo(driver).hasSameHashCodeAs(driver);
    // a traces-specific value is used verbatim: no second v1/traces on the worker
    assertThat(worker.endpoint()).isEqualTo(URI.create("https://collector:4318/otlp/v1/traces"));
    assertThat(worker.headers()).containsEntry("authorization", "Bearer " + SECRET)
        .containsEntry("x-tenant", "a,b+c");
    assertThat(worker.clientKey()).contains(key.toAbsolutePath());
    assertThat(worker.clientCertificate()).contains(cert.toAbsolutePath());
    assertThat(worker.timeout()).isEqualTo(Duration.ofMillis(3210));
    assertThat(worker.gzip()).isTrue();
  }

  @Test
  void fromWorkerEnvironment_roundTripsDefaults() {
    OtlpSettings driver = OtlpSettings.resolve(Map.of());

    OtlpSettings worker = OtlpSettings.fromWorkerEnvironment(driver.toWorkerEnvironment());

    assertThat(worker).isEqualTo(driver);
  }

  @Test
  void fromWorkerEnvironment_roundTripsDefaultHttpEndpoint() {
    OtlpSettings driver = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"));

    OtlpSettings worker = OtlpSettings.fromWorkerEnvironment(driver.toWorkerEnvironment());

    assertThat(worker).isEqualTo(driver);
    assertThat(worker.endpoint()).isEqualTo(URI.create("http://127.0.0.1:4318/v1/traces"));
  }

  @Test
  void fromWorkerEnvironment_ignoresStandardVariables() {
    Map<String, String> env = new HashMap<>(OtlpSettings.resolve(Map.of()).toWorkerEnvironment());
    env.put("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://elsewhere:4317");
    env.put("OTEL_EXPORTER_OTLP_ENDPOINT", "http://elsewhere:4317");

    assertThat(OtlpSettings.fromWorkerEnvironment(env).endpoint()).isEqualTo(URI.create("http://127.0.0.1:4317"));
  }

  @Test
  void toWorkerEnvironment_usesOnlyRavelOtlpNames() {
    Map<String, String> env = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_HEADERS", "a=b")).toWorkerEnvironment();

    assertThat(env.keySet()).allSatisfy(k -> assertThat(k).startsWith(OtlpSettings.WORKER_PREFIX));
  }

  @Test
  void fromWorkerEnvironment_invalidValueNamesTheWorkerVariable() {
    Map<String, String> env = new HashMap<>(OtlpSettings.resolve(Map.of()).toWorkerEnvironment());
    env.put("RAVEL_OTLP_TIMEOUT", "soon");

    assertConfigError(() -> OtlpSettings.fromWorkerEnvironment(env), "RAVEL_OTLP_TIMEOUT");
  }

  @Test
  void equals_differsWhenHeadersDiffer() {
    OtlpSettings a = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_HEADERS", "a=1"));
    OtlpSettings b = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_HEADERS", "a=2"));

    assertThat(a).isNotEqualTo(b);
  }

  @Test
  void resolve_plusInAHeaderValueIsLiteralAsInABase64TokenAndSurvivesTheTripToWorkers() {
    OtlpSettings s = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Basic%20dXNlcjpw+YXNz/w=="));

    assertThat(s.headers()).containsEntry("authorization", "Basic dXNlcjpw+YXNz/w==");
    assertThat(OtlpSettings.fromWorkerEnvironment(s.toWorkerEnvironment()).headers())
        .containsEntry("authorization", "Basic dXNlcjpw+YXNz/w==");
  }

  // ---------------------------------------------------------------- metrics

  @Test
  void resolve_metricsFollowTheGenericSettingsWithV1MetricsAppended() {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318",
        "OTEL_EXPORTER_OTLP_HEADERS", "x-team=" + SECRET));

    assertThat(s.endpoint()).isEqualTo(URI.create("http://collector:4318/v1/traces"));
    OtlpSettings m = s.metrics().orElseThrow();
    assertThat(m.endpoint()).isEqualTo(URI.create("http://collector:4318/v1/metrics"));
    assertThat(m.headers()).containsEntry("x-team", SECRET);
  }

  @Test
  void resolve_metricsSpecificVariablesWinAndAreUsedVerbatim() throws IOException {
    OtlpSettings s = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://jaeger:4317",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://metrics.example:9090/otlp/v1/metrics",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "authorization=Bearer%20" + SECRET,
        "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "2500"));

    assertThat(s.endpoint()).isEqualTo(URI.create("http://jaeger:4317"));
    assertThat(s.headers()).isEmpty();
    OtlpSettings m = s.metrics().orElseThrow();
    assertThat(m.protocol()).isEqualTo(OtlpProtocol.HTTP_PROTOBUF);
    assertThat(m.endpoint()).isEqualTo(URI.create("https://metrics.example:9090/otlp/v1/metrics"));
    assertThat(m.tls()).isTrue();
    assertThat(m.headers()).containsEntry("authorization", "Bearer " + SECRET);
    assertThat(m.timeout()).isEqualTo(Duration.ofMillis(2500));
    assertThat(s.toString()).contains("metrics.example").doesNotContain(SECRET);
  }

  @Test
  void resolve_metricsWithoutSettingsUseTheSpecDefault() {
    OtlpSettings s = OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://jaeger:4317"));

    assertThat(s.metrics().orElseThrow().endpoint()).isEqualTo(URI.create(OtlpSettings.DEFAULT_GRPC_ENDPOINT));
    assertThat(OtlpSettings.resolve(Map.of("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"))
        .metrics().orElseThrow().endpoint()).isEqualTo(URI.create("http://127.0.0.1:4318/v1/metrics"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"none", "NONE", " none "})
  void resolve_metricsExporterNoneTurnsOtlpMetricsOff(String value) {
    assertThat(OtlpSettings.resolve(Map.of("OTEL_METRICS_EXPORTER", value)).metrics()).isEmpty();
    assertThat(OtlpSettings.resolve(Map.of("OTEL_METRICS_EXPORTER", "otlp")).metrics()).isPresent();
  }

  @Test
  void resolve_unsupportedMetricsExporterFailsNamingTheVariable() {
    ConfigException e = assertConfigError(Map.of("OTEL_METRICS_EXPORTER", "prometheus"), "OTEL_METRICS_EXPORTER");
    assertThat(e.getMessage()).contains("prometheus").contains("otlp, none");
  }

  @Test
  void resolve_badMetricsValueFailsNamingTheMetricsVariable() {
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "collector:4317"),
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
    assertConfigError(Map.of("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "thrift"), "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL");
  }

  @Test
  void fromWorkerEnvironment_carriesTheMetricsSettingsAndTheirOff() {
    OtlpSettings on = OtlpSettings.resolve(Map.of(
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:4317",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "k=" + SECRET));
    OtlpSettings off = OtlpSettings.resolve(Map.of("OTEL_METRICS_EXPORTER", "none"));

    assertThat(OtlpSettings.fromWorkerEnvironment(on.toWorkerEnvironment())).isEqualTo(on);
    assertThat(OtlpSettings.fromWorkerEnvironment(on.toWorkerEnvironment()).metrics().orElseThrow().headers())
        .containsEntry("k", SECRET);
    assertThat(OtlpSettings.fromWorkerEnvironment(off.toWorkerEnvironment()).metrics()).isEmpty();
  }

  // ---------------------------------------------------------------- helpers

  private Path pem(String name) throws IOException {
    return Files.writeString(tmp.resolve(name), "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  }

  private static ConfigException assertConfigError(Map<String, String> env, String key) {
    return assertConfigError(() -> OtlpSettings.resolve(env), key);
  }

  private static ConfigException assertConfigError(ThrowingCallable resolution, String key) {
    ConfigException e = catchThrowableOfType(ConfigException.class, resolution);
    assertThat(e).as("expected a ConfigException naming %s", key).isNotNull();
    assertThat(e.key()).isEqualTo(key);
    assertThat(e.getMessage()).startsWith(key + ": ");
    return e;
  }
}
