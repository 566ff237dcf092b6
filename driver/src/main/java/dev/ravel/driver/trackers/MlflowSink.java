package dev.ravel.driver.trackers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.runs.StepRecord;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The {@code mlflow} tracker: one MLflow run per Ravel run on the tracking server at {@code MLFLOW_TRACKING_URI},
 * through MLflow's REST API ({@code /api/2.0/mlflow/...}). The run is created in the experiment
 * {@code MLFLOW_EXPERIMENT_NAME} (default {@value #DEFAULT_EXPERIMENT}, created if missing), named by the Ravel run
 * id, tagged with it ({@value #RUN_ID_TAG}) and with Ravel's git commit ({@code mlflow.source.git.commit}); its
 * params are the run's resolved config; each step's numbers ({@link TrackerMetrics}) are metrics at that step; the
 * run ends {@code FINISHED}, {@code FAILED} or {@code KILLED} as the Ravel run does. A resumed Ravel run goes on in
 * the MLflow run of the same id. {@code MLFLOW_TRACKING_TOKEN} (bearer) or {@code MLFLOW_TRACKING_USERNAME} and
 * {@code _PASSWORD} (basic) authenticate; they are secrets and appear in no message.
 */
final class MlflowSink implements Sink {
  static final String URI_ENV = "MLFLOW_TRACKING_URI";
  static final String EXPERIMENT_ENV = "MLFLOW_EXPERIMENT_NAME";
  static final String TOKEN_ENV = "MLFLOW_TRACKING_TOKEN";
  static final String USERNAME_ENV = "MLFLOW_TRACKING_USERNAME";
  static final String PASSWORD_ENV = "MLFLOW_TRACKING_PASSWORD";
  static final String DEFAULT_EXPERIMENT = "ravel";
  static final String RUN_ID_TAG = "ravel.run_id";
  static final String GIT_COMMIT_TAG = "mlflow.source.git.commit";
  static final String RUN_NAME_TAG = "mlflow.runName";
  /** MLflow's limits on one log-batch call, and on a param's value. */
  static final int MAX_PARAMS_PER_BATCH = 100;
  static final int MAX_METRICS_PER_BATCH = 1000;
  static final int MAX_PARAM_VALUE = 6000;
  static final int MAX_KEY = 250;
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(15);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final URI base;
  private final String experimentName;
  private final String authorization;
  private final String ravelRunId;
  private final String gitCommit;
  private final Map<String, String> params;
  private final HttpClient http;
  private volatile String experimentId;
  private volatile String mlflowRunId;

  private MlflowSink(URI base, String experimentName, String authorization, String ravelRunId, String gitCommit,
      Map<String, String> params) {
    this.base = base;
    this.experimentName = experimentName;
    this.authorization = authorization;
    this.ravelRunId = ravelRunId;
    this.gitCommit = gitCommit;
    this.params = params;
    this.http = HttpClient.newBuilder().connectTimeout(CONNECT_TIMEOUT).build();
  }

  /**
   * The tracker for {@code env}'s MLflow settings.
   *
   * @throws ConfigException naming {@value #URI_ENV} when it is unset or not an http(s) URL, or
   *     {@value #PASSWORD_ENV} when a user name comes without it
   */
  static MlflowSink create(Map<String, String> env, String ravelRunId, String gitCommit, Map<String, Object> config) {
    URI base = trackingUri(env);
    String experiment = env.getOrDefault(EXPERIMENT_ENV, "");
    return new MlflowSink(base, experiment.isBlank() ? DEFAULT_EXPERIMENT : experiment.strip(), authorization(env),
        ravelRunId, gitCommit, params(config));
  }

  /** {@code MLFLOW_TRACKING_URI}, checked: set, and an http or https URL with a host. */
  static URI trackingUri(Map<String, String> env) {
    String raw = env.getOrDefault(URI_ENV, "").strip();
    if (raw.isEmpty()) {
      throw new ConfigException(URI_ENV, "not set; telemetry.trackers lists mlflow, whose tracking server this names"
          + " (e.g. http://127.0.0.1:5000)");
    }
    URI u;
    try {
      u = URI.create(raw.endsWith("/") ? raw.substring(0, raw.length() - 1) : raw);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(URI_ENV, "not a URL: '" + redact(raw) + "'");
    }
    String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || u.getHost() == null) {
      throw new ConfigException(URI_ENV, "must be the http:// or https:// URL of an MLflow tracking server, got '"
          + redact(raw) + "' (Ravel talks to MLflow through its REST API)");
    }
    if (u.getRawUserInfo() != null) {
      throw new ConfigException(URI_ENV, "must not hold a user name or password (got '" + redact(raw)
          + "'): set " + USERNAME_ENV + " and " + PASSWORD_ENV + ", or " + TOKEN_ENV);
    }
    return u;
  }

  /** {@code raw} without anything between {@code //} and {@code @} (credentials), for messages. */
  static String redact(String raw) {
    return raw.replaceAll("//[^/@]*@", "//****@");
  }

  /** The {@code Authorization} header's value from {@code env}, or {@code null}. */
  static String authorization(Map<String, String> env) {
    String token = env.getOrDefault(TOKEN_ENV, "");
    if (!token.isBlank()) {
      return "Bearer " + token.strip();
    }
    String user = env.getOrDefault(USERNAME_ENV, "");
    if (!user.isBlank()) {
      String password = env.getOrDefault(PASSWORD_ENV, "");
      if (password.isEmpty()) {
        throw new ConfigException(PASSWORD_ENV, "not set, though " + USERNAME_ENV + " is");
      }
      return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }
    return null;
  }

  /**
   * The resolved config as MLflow params: one per key, the value as text (lists and maps as JSON), cut to MLflow's
   * {@value #MAX_PARAM_VALUE} characters.
   */
  static Map<String, String> params(Map<String, Object> config) {
    Map<String, String> out = new LinkedHashMap<>();
    config.forEach((k, v) -> {
      String text;
      if (v == null) {
        text = "";
      } else if (v instanceof Map<?, ?> || v instanceof java.util.Collection<?>) {
        try {
          text = JSON.writeValueAsString(v);
        } catch (IOException e) {
          text = String.valueOf(v);
        }
      } else {
        text = String.valueOf(v);
      }
      out.put(cut(k, MAX_KEY), cut(text, MAX_PARAM_VALUE));
    });
    return out;
  }

  private static String cut(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max - 3) + "...";
  }

  /** Log-batch bodies for {@code params}: at most {@value #MAX_PARAMS_PER_BATCH} params each. */
  static List<ObjectNode> paramBatches(String runId, Map<String, String> params) {
    List<ObjectNode> out = new ArrayList<>();
    ObjectNode body = null;
    for (Map.Entry<String, String> p : params.entrySet()) {
      if (body == null || body.get("params").size() == MAX_PARAMS_PER_BATCH) {
        body = JSON.createObjectNode().put("run_id", runId);
        body.putArray("params");
        out.add(body);
      }
      ((ArrayNode) body.get("params")).addObject().put("key", p.getKey()).put("value", p.getValue());
    }
    return out;
  }

  /**
   * Log-batch bodies for {@code steps}' metrics: each step's numbers at its step number and end time, at most
   * {@value #MAX_METRICS_PER_BATCH} metrics a body. A number that is not finite goes as MLflow's JSON spells it
   * ({@code "NaN"}, {@code "Infinity"}, {@code "-Infinity"}).
   */
  static List<ObjectNode> metricBatches(String runId, List<StepRecord> steps, long timestampMillis) {
    List<ObjectNode> out = new ArrayList<>();
    ObjectNode body = null;
    for (StepRecord m : steps) {
      for (Map.Entry<String, Double> e : TrackerMetrics.of(m).entrySet()) {
        if (body == null || body.get("metrics").size() == MAX_METRICS_PER_BATCH) {
          body = JSON.createObjectNode().put("run_id", runId);
          body.putArray("metrics");
          out.add(body);
        }
        ObjectNode metric = ((ArrayNode) body.get("metrics")).addObject().put("key", e.getKey());
        double v = e.getValue();
        if (Double.isFinite(v)) {
          metric.put("value", v);
        } else {
          metric.put("value", Double.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
        }
        metric.put("timestamp", timestampMillis).put("step", m.step());
      }
    }
    return out;
  }

  /** The MLflow run status of a Ravel run's {@code status}. */
  static String mlflowStatus(String status) {
    return switch (status) {
      case "succeeded" -> "FINISHED";
      case "interrupted" -> "KILLED";
      default -> "FAILED";
    };
  }

  @Override
  public String name() {
    return "mlflow";
  }

  @Override
  public void start() throws IOException, InterruptedException {
    if (experimentId == null) {
      experimentId = experiment();
    }
    String existing = findRun();
    Set<String> logged = new HashSet<>();
    if (existing != null) { // a resumed Ravel run: the same MLflow run, running again
      mlflowRunId = existing;
      post("runs/update", JSON.createObjectNode().put("run_id", existing).put("status", "RUNNING"));
      JsonNode run = get("runs/get?run_id=" + enc(existing)).path("run").path("data").path("params");
      run.forEach(p -> logged.add(p.path("key").asText()));
    } else {
      ObjectNode body = JSON.createObjectNode().put("experiment_id", experimentId).put("run_name", ravelRunId)
          .put("start_time", System.currentTimeMillis());
      ArrayNode tags = body.putArray("tags");
      tags.addObject().put("key", RUN_ID_TAG).put("value", ravelRunId);
      tags.addObject().put("key", RUN_NAME_TAG).put("value", ravelRunId);
      tags.addObject().put("key", GIT_COMMIT_TAG).put("value", gitCommit);
      mlflowRunId = post("runs/create", body).path("run").path("info").path("run_id").asText();
      if (mlflowRunId.isEmpty()) {
        throw new IOException("MLflow's runs/create answered no run id");
      }
    }
    Map<String, String> fresh = new LinkedHashMap<>(params);
    fresh.keySet().removeAll(logged); // MLflow refuses to change a param: a resumed run keeps its first values
    for (ObjectNode b : paramBatches(mlflowRunId, fresh)) {
      post("runs/log-batch", b);
    }
  }

  private String experiment() throws IOException, InterruptedException {
    try {
      return get("experiments/get-by-name?experiment_name=" + enc(experimentName))
          .path("experiment").path("experiment_id").asText();
    } catch (MlflowException e) {
      if (!e.code().equals("RESOURCE_DOES_NOT_EXIST")) {
        throw e;
      }
    }
    try {
      return post("experiments/create", JSON.createObjectNode().put("name", experimentName))
          .path("experiment_id").asText();
    } catch (MlflowException e) { // created meanwhile by another run
      if (!e.code().equals("RESOURCE_ALREADY_EXISTS")) {
        throw e;
      }
      return get("experiments/get-by-name?experiment_name=" + enc(experimentName))
          .path("experiment").path("experiment_id").asText();
    }
  }

  /** The MLflow run tagged with this Ravel run's id in the experiment, if there is one. */
  private String findRun() throws IOException, InterruptedException {
    ObjectNode body = JSON.createObjectNode();
    body.putArray("experiment_ids").add(experimentId);
    body.put("filter", "tags.`" + RUN_ID_TAG + "` = '" + ravelRunId + "'").put("max_results", 1);
    JsonNode runs = post("runs/search", body).path("runs");
    return runs.isArray() && !runs.isEmpty() ? runs.get(0).path("info").path("run_id").asText(null) : null;
  }

  @Override
  public void send(List<StepRecord> steps) throws IOException, InterruptedException {
    for (ObjectNode b : metricBatches(mlflowRunId, steps, System.currentTimeMillis())) {
      post("runs/log-batch", b);
    }
  }

  @Override
  public void finish(String status) throws IOException, InterruptedException {
    post("runs/update", JSON.createObjectNode().put("run_id", mlflowRunId).put("status", mlflowStatus(status))
        .put("end_time", System.currentTimeMillis()));
  }

  @Override
  public void close() {
    // the HTTP client holds no process; its idle connections end with the JVM
  }

  @Override
  public Map<String, Object> details() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("tracking_uri", base.toString());
    m.put("experiment_id", experimentId);
    m.put("run_id", mlflowRunId);
    return m;
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  private JsonNode get(String path) throws IOException, InterruptedException {
    return call(request(path).GET().build(), path);
  }

  private JsonNode post(String path, ObjectNode body) throws IOException, InterruptedException {
    return call(request(path).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body), StandardCharsets.UTF_8)).build(), path);
  }

  private HttpRequest.Builder request(String path) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/api/2.0/mlflow/" + path))
        .timeout(REQUEST_TIMEOUT);
    if (authorization != null) {
      b.header("Authorization", authorization);
    }
    return b;
  }

  private JsonNode call(HttpRequest request, String path) throws IOException, InterruptedException {
    String endpoint = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
    HttpResponse<String> r;
    try {
      r = http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new IOException("cannot reach " + base + " (" + endpoint + "): " + (e.getMessage() == null
          ? e.getClass().getSimpleName() : e.getMessage()), e);
    }
    JsonNode body;
    try {
      body = r.body().isBlank() ? JSON.createObjectNode() : JSON.readTree(r.body());
    } catch (IOException e) {
      body = JSON.createObjectNode();
    }
    if (r.statusCode() / 100 != 2) {
      String code = body.path("error_code").asText("");
      String message = body.path("message").asText(r.body());
      throw new MlflowException(code, "HTTP " + r.statusCode() + " from " + base + " (" + endpoint + ")"
          + (code.isEmpty() ? "" : " " + code) + ": " + cut(message.strip().replaceAll("\\s+", " "), 200));
    }
    return body;
  }

  /** An error answer of the tracking server, with MLflow's error code. */
  static final class MlflowException extends IOException {
    private final String code;

    MlflowException(String code, String message) {
      super(message);
      this.code = code;
    }

    String code() {
      return code;
    }
  }
}
