package dev.ravel.telemetry.otlp;

import dev.ravel.telemetry.config.ConfigException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The one resolution of the {@code OTEL_EXPORTER_OTLP_*} settings for traces, used by every process and
 * every layer of a run. Rules (OpenTelemetry's exporter spec):
 * <ul>
 *   <li>the signal-specific variable ({@code OTEL_EXPORTER_OTLP_TRACES_X}) wins over the generic one
 *       ({@code OTEL_EXPORTER_OTLP_X}); an empty string counts as unset;</li>
 *   <li>protocol {@code grpc} (default) or {@code http/protobuf}; anything else is an error;</li>
 *   <li>a signal-specific endpoint is used verbatim; {@code v1/traces} is appended only to a generic
 *       endpoint used with {@code http/protobuf};</li>
 *   <li>headers are {@code key=value} pairs separated by commas, values URL-encoded;</li>
 *   <li>TLS is chosen by an {@code https} endpoint; a certificate, client key and client certificate are
 *       PEM files that must exist.</li>
 * </ul>
 * Resolution happens once, at driver start; each error names the variable it came from. The resolved
 * values travel to workers explicitly ({@link #toWorkerEnvironment()}). Header values are secret: they
 * appear in no message and in no {@link #toString()}.
 *
 * <p>Metrics are resolved by the same rules from {@code OTEL_EXPORTER_OTLP_METRICS_*} and the generic
 * variables ({@code v1/metrics} appended to a generic http endpoint) into {@link #metrics()}, which is empty
 * when {@code OTEL_METRICS_EXPORTER=none}.
 */
public final class OtlpSettings {
  /** Prefix of the signal-specific variables. */
  public static final String TRACES_PREFIX = "OTEL_EXPORTER_OTLP_TRACES_";
  /** Prefix of the generic variables. */
  public static final String GENERIC_PREFIX = "OTEL_EXPORTER_OTLP_";
  /** Prefix of the metrics-specific variables. */
  public static final String METRICS_PREFIX = "OTEL_EXPORTER_OTLP_METRICS_";
  /** Prefix under which resolved settings travel to workers. */
  public static final String WORKER_PREFIX = "RAVEL_OTLP_";
  /** Prefix under which resolved metrics settings travel to workers. */
  public static final String WORKER_METRICS_PREFIX = WORKER_PREFIX + "METRICS_";
  /** The OpenTelemetry variable that turns OTLP metrics off ({@code none}); {@code otlp} is the default. */
  public static final String METRICS_EXPORTER = "OTEL_METRICS_EXPORTER";

  static final String DEFAULT_GRPC_ENDPOINT = "http://127.0.0.1:4317";
  static final String DEFAULT_HTTP_ENDPOINT = "http://127.0.0.1:4318/v1/traces";
  static final String DEFAULT_HTTP_METRICS_ENDPOINT = "http://127.0.0.1:4318/v1/metrics";
  static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

  private final URI endpoint;
  private final OtlpProtocol protocol;
  private final Map<String, String> headers;
  private final Path certificate;
  private final Path clientKey;
  private final Path clientCertificate;
  private final Duration timeout;
  private final boolean gzip;
  private final boolean endpointConfigured;
  private final OtlpSettings metrics;

  private OtlpSettings(URI endpoint, OtlpProtocol protocol, Map<String, String> headers, Path certificate,
      Path clientKey, Path clientCertificate, Duration timeout, boolean gzip, boolean endpointConfigured,
      OtlpSettings metrics) {
    this.endpoint = endpoint;
    this.protocol = protocol;
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    this.certificate = certificate;
    this.clientKey = clientKey;
    this.clientCertificate = clientCertificate;
    this.timeout = timeout;
    this.gzip = gzip;
    this.endpointConfigured = endpointConfigured;
    this.metrics = metrics;
  }

  /** Resolves the standard {@code OTEL_EXPORTER_OTLP_*} variables of {@code env}. */
  public static OtlpSettings resolve(Map<String, String> env) {
    OtlpSettings traces = resolve(new Source(env, TRACES_PREFIX, GENERIC_PREFIX), Signal.TRACES, null);
    OtlpSettings metrics = null;
    String exporter = env.get(METRICS_EXPORTER);
    String e = exporter == null ? "" : exporter.trim().toLowerCase(Locale.ROOT);
    if (e.isEmpty() || e.equals("otlp")) {
      metrics = resolve(new Source(env, METRICS_PREFIX, GENERIC_PREFIX), Signal.METRICS, null);
    } else if (!e.equals("none")) {
      throw new ConfigException(METRICS_EXPORTER, "Ravel exports metrics over OTLP or not at all (valid: otlp, none), got '"
          + exporter + "'");
    }
    return traces.withMetrics(metrics);
  }

  private OtlpSettings withMetrics(OtlpSettings m) {
    return new OtlpSettings(endpoint, protocol, headers, certificate, clientKey, clientCertificate, timeout, gzip,
        endpointConfigured, m);
  }

  /** Reads back settings that a driver resolved and passed with {@link #toWorkerEnvironment()}. */
  public static OtlpSettings fromWorkerEnvironment(Map<String, String> env) {
    Map<String, String> withHeaders = new LinkedHashMap<>(env);
    readHeadersFile(withHeaders, WORKER_PREFIX);
    OtlpSettings metrics = null;
    String metricsEndpoint = env.get(WORKER_METRICS_PREFIX + "ENDPOINT");
    if (metricsEndpoint != null && !metricsEndpoint.isEmpty()) {
      readHeadersFile(withHeaders, WORKER_METRICS_PREFIX);
      metrics = resolve(new Source(withHeaders, WORKER_METRICS_PREFIX, null), Signal.METRICS, null);
    }
    return resolve(new Source(withHeaders, WORKER_PREFIX, null), Signal.TRACES, metrics);
  }

  /** Replaces {@code <prefix>HEADERS} by the contents of the file {@code <prefix>HEADERS_FILE} names. */
  private static void readHeadersFile(Map<String, String> env, String prefix) {
    String file = env.get(prefix + "HEADERS_FILE");
    if (file == null || file.isEmpty()) {
      return;
    }
    try {
      env.put(prefix + "HEADERS", Files.readString(Path.of(file), StandardCharsets.UTF_8).trim());
    } catch (java.io.IOException | RuntimeException e) {
      throw new ConfigException(prefix + "HEADERS_FILE", "cannot read " + file
          + " (on a multi-node cluster the run folder must be on storage every node sees): " + e.getMessage());
    }
  }

  /** Whether {@code env} holds settings a driver passed on (a job's driver started by {@code ravel submit}). */
  public static boolean inWorkerEnvironment(Map<String, String> env) {
    String e = env.get(WORKER_PREFIX + "ENDPOINT");
    return e != null && !e.isEmpty();
  }

  /** The signal a settings value is for: its default endpoint and the path appended to a generic one. */
  private enum Signal {
    TRACES("v1/traces", DEFAULT_HTTP_ENDPOINT),
    METRICS("v1/metrics", DEFAULT_HTTP_METRICS_ENDPOINT);

    final String path;
    final String defaultHttp;

    Signal(String path, String defaultHttp) {
      this.path = path;
      this.defaultHttp = defaultHttp;
    }
  }

  private static OtlpSettings resolve(Source src, Signal signal, OtlpSettings metrics) {
    Optional<Setting> proto = src.get("PROTOCOL");
    OtlpProtocol protocol = proto.map(OtlpSettings::protocol).orElse(OtlpProtocol.GRPC);

    Optional<Setting> ep = src.get("ENDPOINT");
    URI endpoint;
    if (ep.isEmpty()) {
      endpoint = URI.create(protocol == OtlpProtocol.GRPC ? DEFAULT_GRPC_ENDPOINT : signal.defaultHttp);
    } else {
      Setting s = ep.get();
      String value = s.value.trim();
      if (!s.specific && protocol == OtlpProtocol.HTTP_PROTOBUF) {
        value = value.endsWith("/") ? value + signal.path : value + "/" + signal.path;
      }
      endpoint = endpoint(s.key, value);
    }

    Map<String, String> headers = src.get("HEADERS").map(OtlpSettings::headers).orElse(Map.of());
    Path certificate = src.get("CERTIFICATE").map(OtlpSettings::pemFile).orElse(null);
    Optional<Setting> keySetting = src.get("CLIENT_KEY");
    Optional<Setting> certSetting = src.get("CLIENT_CERTIFICATE");
    Path clientKey = keySetting.map(OtlpSettings::pemFile).orElse(null);
    Path clientCert = certSetting.map(OtlpSettings::pemFile).orElse(null);
    if ((clientKey == null) != (clientCert == null)) {
      // name the missing variable, in the family (traces-specific or generic) of the one that was given
      String given = keySetting.or(() -> certSetting).get().key;
      String family = given.substring(0, given.lastIndexOf(clientKey == null ? "CLIENT_CERTIFICATE" : "CLIENT_KEY"));
      String missing = family + (clientKey == null ? "CLIENT_KEY" : "CLIENT_CERTIFICATE");
      throw new ConfigException(missing, "client TLS needs both a client key and a client certificate (" + given
          + " is set)");
    }
    if ((certificate != null || clientKey != null) && !"https".equals(endpoint.getScheme())) {
      throw new ConfigException(ep.map(s -> s.key).orElse(src.name("ENDPOINT")),
          "a TLS certificate is configured but the endpoint is not https: " + endpoint);
    }
    Duration timeout = src.get("TIMEOUT").map(OtlpSettings::timeout).orElse(DEFAULT_TIMEOUT);
    boolean gzip = src.get("COMPRESSION").map(OtlpSettings::gzip).orElse(false);
    return new OtlpSettings(endpoint, protocol, headers, certificate, clientKey, clientCert, timeout, gzip,
        ep.isPresent(), metrics);
  }

  private static OtlpProtocol protocol(Setting s) {
    String v = s.value.trim().toLowerCase(Locale.ROOT);
    for (OtlpProtocol p : OtlpProtocol.values()) {
      if (p.value().equals(v)) {
        return p;
      }
    }
    if (v.equals("http/json")) {
      throw new ConfigException(s.key, "'http/json' is not supported; use 'grpc' or 'http/protobuf'");
    }
    throw new ConfigException(s.key, "unknown protocol '" + s.value + "' (valid: grpc, http/protobuf)");
  }

  private static URI endpoint(String key, String value) {
    URI uri;
    try {
      uri = new URI(value);
    } catch (URISyntaxException e) {
      throw new ConfigException(key, "not a valid URL: '" + value + "' (" + e.getReason() + ")");
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("https")) {
      throw new ConfigException(key, "URL must start with http:// or https://, got '" + value + "'");
    }
    if (uri.getHost() == null || uri.getHost().isEmpty()) {
      throw new ConfigException(key, "URL has no host: '" + value + "'");
    }
    if (uri.getUserInfo() != null) {
      throw new ConfigException(key, "credentials in the URL are not allowed; use OTEL_EXPORTER_OTLP_HEADERS");
    }
    return uri;
  }

  private static Map<String, String> headers(Setting s) {
    Map<String, String> out = new LinkedHashMap<>();
    int i = 0;
    for (Map.Entry<String, String> e : dev.ravel.telemetry.config.Values.pairs(s.key, s.value).entrySet()) {
      i++;
      if (!e.getKey().matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")) {
        throw new ConfigException(s.key, "entry " + i + " has an invalid header name");
      }
      out.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
    }
    return out;
  }

  private static Path pemFile(Setting s) {
    Path p = Path.of(s.value.trim());
    if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
      throw new ConfigException(s.key, "file not found or not readable: " + p);
    }
    return p.toAbsolutePath();
  }

  private static Duration timeout(Setting s) {
    try {
      long ms = Long.parseLong(s.value.trim());
      if (ms < 0) {
        throw new ConfigException(s.key, "must not be negative, got " + ms);
      }
      return Duration.ofMillis(ms);
    } catch (NumberFormatException e) {
      throw new ConfigException(s.key, "expected milliseconds as a whole number, got '" + s.value + "'");
    }
  }

  private static boolean gzip(Setting s) {
    String v = s.value.trim().toLowerCase(Locale.ROOT);
    if (v.equals("gzip")) {
      return true;
    }
    if (v.equals("none")) {
      return false;
    }
    throw new ConfigException(s.key, "unknown compression '" + s.value + "' (valid: gzip, none)");
  }

  /**
   * These resolved settings as {@code RAVEL_OTLP_*} variables, to pass explicitly into a worker's
   * environment. They include the headers: treat the map as secret.
   */
  public Map<String, String> toWorkerEnvironment() {
    Map<String, String> env = workerVariables(WORKER_PREFIX);
    if (metrics != null) {
      env.putAll(metrics.workerVariables(WORKER_METRICS_PREFIX));
    } else {
      env.put(WORKER_METRICS_PREFIX + "ENDPOINT", ""); // metrics off
    }
    return env;
  }

  private Map<String, String> workerVariables(String prefix) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put(prefix + "ENDPOINT", endpoint.toString());
    env.put(prefix + "PROTOCOL", protocol.value());
    env.put(prefix + "HEADERS", encodeHeaders());
    env.put(prefix + "CERTIFICATE", certificate == null ? "" : certificate.toString());
    env.put(prefix + "CLIENT_KEY", clientKey == null ? "" : clientKey.toString());
    env.put(prefix + "CLIENT_CERTIFICATE", clientCertificate == null ? "" : clientCertificate.toString());
    env.put(prefix + "TIMEOUT", Long.toString(timeout.toMillis()));
    env.put(prefix + "COMPRESSION", gzip ? "gzip" : "none");
    return env;
  }

  /**
   * These settings as the standard traces-specific variables, for an engine that reads them itself
   * (vLLM's exporter reads only {@code OTEL_EXPORTER_OTLP_TRACES_*}). Secret: holds the headers.
   */
  public Map<String, String> toTracesEnvironment() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put(TRACES_PREFIX + "ENDPOINT", endpoint.toString());
    env.put(TRACES_PREFIX + "PROTOCOL", protocol.value());
    if (!headers.isEmpty()) {
      env.put(TRACES_PREFIX + "HEADERS", encodeHeaders());
    }
    if (certificate != null) {
      env.put(TRACES_PREFIX + "CERTIFICATE", certificate.toString());
    }
    if (clientKey != null) {
      env.put(TRACES_PREFIX + "CLIENT_KEY", clientKey.toString());
      env.put(TRACES_PREFIX + "CLIENT_CERTIFICATE", clientCertificate.toString());
    }
    if (gzip) {
      env.put(TRACES_PREFIX + "COMPRESSION", "gzip");
    }
    env.put(TRACES_PREFIX + "TIMEOUT", Long.toString(timeout.toMillis()));
    return env;
  }

  private String encodeHeaders() {
    StringBuilder sb = new StringBuilder();
    headers.forEach((k, v) -> {
      if (sb.length() > 0) {
        sb.append(',');
      }
      sb.append(k).append('=').append(java.net.URLEncoder.encode(v, StandardCharsets.UTF_8).replace("+", "%20"));
    });
    return sb.toString();
  }

  /**
   * The settings OTLP metrics are exported with (their own endpoint, headers and TLS, by the same rules);
   * empty when {@code OTEL_METRICS_EXPORTER=none}, and on the metrics settings themselves.
   */
  public Optional<OtlpSettings> metrics() {
    return Optional.ofNullable(metrics);
  }

  /** The full URL spans are sent to ({@code .../v1/traces} for http/protobuf). */
  public URI endpoint() {
    return endpoint;
  }

  /** Whether an endpoint was configured rather than defaulted. */
  public boolean endpointConfigured() {
    return endpointConfigured;
  }

  public OtlpProtocol protocol() {
    return protocol;
  }

  /** Header names and values; the values are secret. */
  public Map<String, String> headers() {
    return headers;
  }

  public Optional<Path> certificate() {
    return Optional.ofNullable(certificate);
  }

  public Optional<Path> clientKey() {
    return Optional.ofNullable(clientKey);
  }

  public Optional<Path> clientCertificate() {
    return Optional.ofNullable(clientCertificate);
  }

  public Duration timeout() {
    return timeout;
  }

  public boolean gzip() {
    return gzip;
  }

  public boolean tls() {
    return "https".equalsIgnoreCase(endpoint.getScheme());
  }

  /** A description safe to log: header names only, values masked. */
  @Override
  public String toString() {
    return "OtlpSettings{endpoint=" + endpoint + ", protocol=" + protocol.value() + ", headers="
        + headers.keySet() + " (values hidden), tls=" + tls() + ", timeout=" + timeout.toMillis() + "ms"
        + (gzip ? ", gzip" : "") + (metrics == null ? "" : ", metrics=" + metrics) + "}";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OtlpSettings s && endpoint.equals(s.endpoint) && protocol == s.protocol
        && headers.equals(s.headers) && Objects.equals(certificate, s.certificate)
        && Objects.equals(clientKey, s.clientKey) && Objects.equals(clientCertificate, s.clientCertificate)
        && timeout.equals(s.timeout) && gzip == s.gzip && Objects.equals(metrics, s.metrics);
  }

  @Override
  public int hashCode() {
    return Objects.hash(endpoint, protocol, headers, timeout, gzip);
  }

  private record Setting(String key, String value, boolean specific) {}

  private static final class Source {
    private final Map<String, String> env;
    private final String specific;
    private final String generic;

    Source(Map<String, String> env, String specific, String generic) {
      this.env = env;
      this.specific = specific;
      this.generic = generic;
    }

    String name(String suffix) {
      return specific + suffix;
    }

    /** The signal-specific value, else the generic one; empty strings are unset. */
    Optional<Setting> get(String suffix) {
      String v = env.get(specific + suffix);
      if (v != null && !v.isEmpty()) {
        return Optional.of(new Setting(specific + suffix, v, true));
      }
      if (generic != null) {
        v = env.get(generic + suffix);
        if (v != null && !v.isEmpty()) {
          return Optional.of(new Setting(generic + suffix, v, false));
        }
      }
      return Optional.empty();
    }
  }
}
