package dev.ravel.driver.jobs;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client of Ray's Jobs REST API, served by the dashboard (default {@code http://127.0.0.1:8265}), over
 * {@link HttpClient} with Jackson. Endpoints as Ray 2.39.0 serves them (dashboard/modules/job/job_head.py):
 * <pre>
 * POST   /api/jobs/                 submit          -> {job_id, submission_id}
 * GET    /api/jobs/                 list            -> [JobDetails]
 * GET    /api/jobs/{id}             status          -> JobDetails
 * GET    /api/jobs/{id}/logs        logs            -> {logs}
 * GET    /api/jobs/{id}/logs/tail   follow (websocket, text frames of log lines)
 * POST   /api/jobs/{id}/stop        stop            -> {stopped}
 * DELETE /api/jobs/{id}             delete          -> {deleted}
 * GET    /api/version               version         -> {version, ray_version, ...}
 * </pre>
 * {@code id} is a submission id or a driver's job id. Failures are typed: {@link DashboardUnreachableException}
 * (names the URL), {@link JobNotFoundException} (names the id), {@link JobsHttpException} (status code and
 * the server's message). Every wait is bounded. Thread-safe.
 */
public final class JobsClient {
  private static final Logger LOG = LoggerFactory.getLogger(JobsClient.class);
  /** The dashboard's default address on this machine. */
  public static final URI DEFAULT_URL = URI.create("http://127.0.0.1:8265");
  private static final Pattern PY_EXCEPTION = Pattern.compile("^([A-Za-z_][\\w.]*(?:Error|Exception|Exit)): (.*)$");
  private static final int MAX_MESSAGE = 500;

  private final URI base;
  private final HttpClient http;
  private final Duration connectTimeout;
  private final Duration requestTimeout;
  private final Duration pollInterval;
  private final boolean websocketLogs;

  private JobsClient(Builder b) {
    this.base = b.base;
    this.connectTimeout = b.connectTimeout;
    this.requestTimeout = b.requestTimeout;
    this.pollInterval = b.pollInterval;
    this.websocketLogs = b.websocketLogs;
    this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(connectTimeout)
        .followRedirects(HttpClient.Redirect.NEVER).build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A client of the dashboard at {@code url} with default timeouts. */
  public static JobsClient of(String url) {
    return builder().baseUrl(url).build();
  }

  /** The dashboard URL, e.g. {@code http://127.0.0.1:8265}. */
  public URI baseUrl() {
    return base;
  }

  /** The cluster's Ray version ({@code GET /api/version}). */
  public String rayVersion() {
    HttpResponse<String> r = send(get("/api/version"), "get the Ray version", null);
    return Json.read(r.body(), Json.VersionResponse.class, "version").rayVersion();
  }

  /** The addresses of the cluster's alive nodes, as each registered with the GCS ({@code nodeManagerAddress}). */
  public List<String> aliveNodeAddresses() {
    HttpResponse<String> r = send(get("/nodes?view=summary"), "list the cluster's nodes", null);
    Json.NodesResponse nodes = Json.read(r.body(), Json.NodesResponse.class, "nodes");
    if (nodes == null || nodes.data() == null || nodes.data().summary() == null) {
      return List.of();
    }
    return nodes.data().summary().stream().map(Json.NodeSummary::raylet)
        .filter(n -> n != null && "ALIVE".equals(n.state()) && n.nodeManagerAddress() != null)
        .map(Json.Raylet::nodeManagerAddress).distinct().toList();
  }

  /** Submits a job; returns its submission id. */
  public JobSubmission submit(JobRequest request) {
    Objects.requireNonNull(request, "request");
    String what = "submit job" + request.submissionId().map(id -> " '" + id + "'").orElse("");
    HttpRequest.Builder rb = request("/api/jobs/").header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(Json.write(request.toBody()), StandardCharsets.UTF_8));
    HttpResponse<String> r;
    try {
      r = send(rb, what, null);
    } catch (JobsHttpException e) {
      // the server may quote the runtime environment back: keep secret values out of the error
      throw new JobsHttpException(what + " at " + base, e.statusCode(), Redaction.scrub(e.serverMessage(), request),
          Redaction.scrub(e.responseBody(), request));
    }
    Json.SubmitResponse s = Json.read(r.body(), Json.SubmitResponse.class, what);
    if (s.submissionId() == null || s.submissionId().isEmpty()) {
      throw new JobsException(what + ": the dashboard answered without a submission_id");
    }
    LOG.debug("submitted {} as {}", request, s.submissionId());
    return new JobSubmission(s.submissionId(), s.jobId());
  }

  /** The job with this submission id or job id. */
  public JobInfo status(String id) {
    HttpResponse<String> r = send(get("/api/jobs/" + segment(id)), "get job '" + id + "'", id);
    return JobInfo.from(Json.read(r.body(), Json.Details.class, "job '" + id + "'"));
  }

  /** Every job the cluster knows: submitted ones and drivers that connected by themselves. */
  public List<JobInfo> list() {
    HttpResponse<String> r = send(get("/api/jobs/"), "list jobs", null);
    return Json.readList(r.body(), Json.Details.class, "list jobs").stream().map(JobInfo::from).toList();
  }

  /** All of the job's output so far (stdout and stderr of the entrypoint, as one text). */
  public String logs(String id) {
    HttpResponse<String> r = send(get("/api/jobs/" + segment(id) + "/logs"), "get logs of job '" + id + "'", id);
    String logs = Json.read(r.body(), Json.LogsResponse.class, "logs of job '" + id + "'").logs();
    return logs == null ? "" : logs;
  }

  /**
   * Asks the job to stop (Ray sends SIGTERM to the entrypoint's process group, SIGKILL after
   * {@code RAY_JOB_STOP_WAIT_TIME_S}). Returns whether the job was still running; the status becomes
   * {@link JobStatus#STOPPED} shortly after.
   */
  public boolean stop(String id) {
    HttpResponse<String> r = send(request("/api/jobs/" + segment(id) + "/stop")
        .POST(HttpRequest.BodyPublishers.noBody()), "stop job '" + id + "'", id);
    return Json.read(r.body(), Json.StopResponse.class, "stop job '" + id + "'").stopped();
  }

  /**
   * Deletes a finished job's record and logs. A job that is not terminal cannot be deleted: Ray answers
   * with an error ({@link JobsHttpException}).
   */
  public boolean delete(String id) {
    HttpResponse<String> r = send(request("/api/jobs/" + segment(id)).DELETE(), "delete job '" + id + "'", id);
    return Json.read(r.body(), Json.DeleteResponse.class, "delete job '" + id + "'").deleted();
  }

  /**
   * Polls the job's status until it is terminal or {@code timeout} has passed; returns the last status seen
   * (not terminal if the timeout passed first).
   */
  public JobStatus waitFor(String id, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    JobStatus s = status(id).status();
    while (!s.isTerminal() && System.nanoTime() < deadline) {
      sleep(Math.min(pollInterval.toMillis(), Math.max(1, (deadline - System.nanoTime()) / 1_000_000)));
      s = status(id).status();
    }
    return s;
  }

  /**
   * Streams the job's output, line by line (without the line end), to {@code lines} on the calling thread,
   * from the start, until the job is terminal and its output is read to the end, or until {@code timeout}
   * has passed. Uses the dashboard's websocket ({@code /api/jobs/{id}/logs/tail}); if that is refused or
   * ends early, falls back to polling {@code /logs} and passing on what is new. Returns the last status
   * seen (not terminal if the timeout passed first).
   *
   * @throws JobNotFoundException if there is no such job
   */
  public JobStatus followLogs(String id, Consumer<String> lines, Duration timeout) {
    Objects.requireNonNull(lines, "lines");
    long deadline = System.nanoTime() + timeout.toNanos();
    status(id); // fails early, with the id named, for an unknown job
    LineSplitter out = new LineSplitter(lines);
    if (websocketLogs) {
      tail(id, out, deadline);
    }
    return poll(id, out, deadline);
  }

  /** Follows the websocket until it closes, fails or the deadline passes. */
  private void tail(String id, LineSplitter out, long deadline) {
    URI ws = URI.create((base.getScheme().equals("https") ? "wss" : "ws") + base.toString().substring(base.getScheme().length())
        + "/api/jobs/" + segment(id) + "/logs/tail");
    BlockingQueue<Object> events = new LinkedBlockingQueue<>();
    Object closed = new Object();
    WebSocket.Listener listener = new WebSocket.Listener() {
      private final StringBuilder partial = new StringBuilder();

      @Override
      public CompletionStage<?> onText(WebSocket socket, CharSequence data, boolean last) {
        partial.append(data);
        if (last) {
          events.add(partial.toString());
          partial.setLength(0);
        }
        socket.request(1);
        return null;
      }

      @Override
      public CompletionStage<?> onClose(WebSocket socket, int statusCode, String reason) {
        events.add(closed);
        return null;
      }

      @Override
      public void onError(WebSocket socket, Throwable error) {
        events.add(error);
      }
    };
    WebSocket socket;
    try {
      CompletableFuture<WebSocket> f = http.newWebSocketBuilder().connectTimeout(connectTimeout).buildAsync(ws, listener);
      socket = f.get(connectTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof WebSocketHandshakeException h && h.getResponse().statusCode() == 404) {
        throw new JobNotFoundException(id, base);
      }
      LOG.debug("log websocket {} refused ({}); polling /logs instead", ws, String.valueOf(c));
      return;
    } catch (TimeoutException e) {
      LOG.debug("log websocket {} did not open; polling /logs instead", ws);
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new JobsException("interrupted while following the logs of job '" + id + "'", e);
    }
    try {
      while (true) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return;
        }
        Object ev = events.poll(Math.min(left, TimeUnit.SECONDS.toNanos(1)), TimeUnit.NANOSECONDS);
        if (ev instanceof String text) {
          out.accept(text);
        } else if (ev == closed) {
          return;
        } else if (ev instanceof Throwable t) {
          LOG.debug("log websocket {} failed ({}); polling /logs for the rest", ws, t.toString());
          return;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new JobsException("interrupted while following the logs of job '" + id + "'", e);
    } finally {
      socket.abort();
    }
  }

  /** Polls status and {@code /logs}, passing on output beyond what {@code out} has seen, until terminal. */
  private JobStatus poll(String id, LineSplitter out, long deadline) {
    while (true) {
      JobStatus s = status(id).status();
      out.catchUp(logs(id));
      if (s.isTerminal()) {
        out.catchUp(logs(id)); // anything written between the two calls above
        out.finish();
        return s;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        out.finish();
        return s;
      }
      sleep(Math.min(pollInterval.toMillis(), Math.max(1, left / 1_000_000)));
    }
  }

  // ------------------------------------------------------------------------------------------- HTTP

  private HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(URI.create(base + path)).timeout(requestTimeout).header("Accept", "application/json");
  }

  private HttpRequest.Builder get(String path) {
    return request(path).GET();
  }

  /** Sends; maps a refused connection, a 404 for {@code id} and other error statuses to typed errors. */
  private HttpResponse<String> send(HttpRequest.Builder rb, String what, String id) {
    HttpResponse<String> r;
    try {
      r = http.send(rb.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (HttpConnectTimeoutException | ConnectException e) {
      throw new DashboardUnreachableException(base, e);
    } catch (HttpTimeoutException e) {
      throw new JobsException(what + ": the Ray dashboard at " + base + " did not answer within "
          + requestTimeout.toMillis() + " ms", e);
    } catch (IOException e) {
      throw new DashboardUnreachableException(base, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new JobsException(what + ": interrupted", e);
    }
    int code = r.statusCode();
    if (code == 200) {
      return r;
    }
    String body = r.body() == null ? "" : r.body();
    if (code == 404 && id != null) {
      throw new JobNotFoundException(id, base);
    }
    throw new JobsHttpException(what + " at " + base, code, serverMessage(body), body);
  }

  /**
   * The server's explanation in one line: for a Python traceback (what the dashboard sends on errors), its
   * last {@code SomeError: message} line; else the body's first line; at most 500 characters.
   */
  static String serverMessage(String body) {
    String text = body.strip();
    if (text.contains("Traceback (most recent call last)")) {
      String[] ls = text.split("\\R");
      for (int i = ls.length - 1; i >= 0; i--) {
        Matcher m = PY_EXCEPTION.matcher(ls[i].strip());
        if (m.matches()) {
          return clip(m.group(0));
        }
      }
    }
    int nl = text.indexOf('\n');
    return clip(nl < 0 ? text : text.substring(0, nl).strip());
  }

  private static String clip(String s) {
    return s.length() <= MAX_MESSAGE ? s : s.substring(0, MAX_MESSAGE) + "...";
  }

  /** {@code id} as one URL path segment (percent-encoded); an empty id is an error. */
  static String segment(String id) {
    if (id == null || id.isBlank()) {
      throw new IllegalArgumentException("job id: must not be empty");
    }
    StringBuilder sb = new StringBuilder();
    for (byte b : id.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.'
          || c == '_' || c == '~') {
        sb.append(c);
      } else {
        sb.append('%').append(String.format("%02X", b & 0xff));
      }
    }
    return sb.toString();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new JobsException("interrupted", e);
    }
  }

  /** Turns chunks of text into lines; remembers how many characters it has passed on. */
  static final class LineSplitter {
    private final Consumer<String> sink;
    private final StringBuilder pending = new StringBuilder();
    private long seen;

    LineSplitter(Consumer<String> sink) {
      this.sink = sink;
    }

    void accept(String chunk) {
      seen += chunk.length();
      pending.append(chunk);
      int start = 0;
      for (int i = 0; i < pending.length(); i++) {
        if (pending.charAt(i) == '\n') {
          int end = i > start && pending.charAt(i - 1) == '\r' ? i - 1 : i;
          sink.accept(pending.substring(start, end));
          start = i + 1;
        }
      }
      pending.delete(0, start);
    }

    /** Passes on the part of {@code whole} (the full output so far) beyond what was already passed on. */
    void catchUp(String whole) {
      if (whole.length() > seen) {
        accept(whole.substring((int) seen));
      }
    }

    /** Passes on a last line that has no line end. */
    void finish() {
      if (pending.length() > 0) {
        sink.accept(pending.toString());
        pending.setLength(0);
      }
    }

    long seen() {
      return seen;
    }
  }

  /** Options of a {@link JobsClient}. */
  public static final class Builder {
    private URI base = DEFAULT_URL;
    private Duration connectTimeout = Duration.ofSeconds(5);
    private Duration requestTimeout = Duration.ofSeconds(30);
    private Duration pollInterval = Duration.ofMillis(500);
    private boolean websocketLogs = true;

    private Builder() {}

    /**
     * The dashboard URL ({@code http://host:port}; {@code host:port} means http); default
     * {@code http://127.0.0.1:8265}.
     */
    public Builder baseUrl(String url) {
      Objects.requireNonNull(url, "url");
      String u = url.strip();
      if (!u.contains("://")) {
        u = "http://" + u;
      }
      while (u.endsWith("/")) {
        u = u.substring(0, u.length() - 1);
      }
      URI parsed;
      try {
        parsed = new URI(u);
      } catch (URISyntaxException e) {
        throw new IllegalArgumentException("dashboard address: '" + url + "' is not a URL", e);
      }
      return baseUrl(parsed);
    }

    public Builder baseUrl(URI url) {
      Objects.requireNonNull(url, "url");
      if (!"http".equals(url.getScheme()) && !"https".equals(url.getScheme())) {
        throw new IllegalArgumentException("dashboard address: '" + url + "' must be an http or https URL");
      }
      if (url.getHost() == null) {
        throw new IllegalArgumentException("dashboard address: '" + url + "' has no host");
      }
      String s = url.toString();
      this.base = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
      return this;
    }

    /** How long to wait for a connection (default 5 s); past it the dashboard counts as unreachable. */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = positive("connectTimeout", timeout);
      return this;
    }

    /** How long to wait for an answer to one call (default 30 s). */
    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = positive("requestTimeout", timeout);
      return this;
    }

    /** How often {@link #waitFor} and log polling ask again (default 500 ms). */
    public Builder pollInterval(Duration interval) {
      this.pollInterval = positive("pollInterval", interval);
      return this;
    }

    /** Whether {@link #followLogs} first tries the websocket (default true); false: poll only. */
    public Builder websocketLogs(boolean on) {
      this.websocketLogs = on;
      return this;
    }

    public JobsClient build() {
      return new JobsClient(this);
    }

    private static Duration positive(String name, Duration d) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + ": must be positive, got " + d);
      }
      return d;
    }
  }
}
