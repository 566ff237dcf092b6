package dev.ravel.workers.generation.openai;

import dev.ravel.telemetry.config.ConfigException;

import java.io.Serializable;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * How a generation worker reaches inference servers that speak vLLM's OpenAI-compatible protocol: either
 * the servers given ({@code generation.servers}), or one server it launches itself ({@code generation.launch:
 * ravel}, or a {@code generation.launch_command} template). Immutable; {@link #builder()} validates, naming
 * the config key.
 *
 * @param servers base URLs ({@code http://host:port}) this worker sends to; empty when it launches one
 * @param launch {@code "ravel"} to launch {@code ravel serve}; empty otherwise
 * @param launchCommand a command template with {@code {port}}, {@code {host}} and {@code {model}}; empty otherwise
 * @param connectTimeout TCP connect timeout of every request
 * @param requestTimeout the most one completion may take, from sending to the whole response
 * @param maxInFlight requests this worker keeps in flight per server
 * @param refit whether new weights are loaded into the servers ({@code false}: they serve their own model)
 * @param launchTimeout how long a launched server may take to answer {@code /health}
 * @param serverHeapMb the launched {@code ravel serve} JVM's heap
 * @param adapterTag what names this run's weight adapters apart from any other run's on a shared server
 *     ({@code <model>-<tag>-v<version>}; empty: {@code <model>-v<version>})
 * @param weightSync how new weights reach the servers: {@link #SYNC_NATIVE} (vLLM's weight-update protocol) or
 *     {@link #SYNC_LORA} (vLLM's runtime LoRA routes)
 * @param inflightUpdates with the native protocol, whether requests in flight go on under the new weights
 *     ({@code pause?mode=keep}) instead of finishing first ({@code pause?mode=wait})
 * @param recordExchanges whether a launched {@code ravel serve} records every HTTP exchange into the run folder
 * @param refitOwner whether this worker drives its servers' native weight updates: false for a worker whose server
 *     another worker of the run drives (fewer servers than workers), which then only sends requests
 */
public record ServerBackendSpec(List<String> servers, String launch, String launchCommand, Duration connectTimeout,
    Duration requestTimeout, int maxInFlight, boolean refit, Duration launchTimeout, int serverHeapMb,
    String adapterTag, String weightSync, boolean inflightUpdates, boolean recordExchanges, boolean refitOwner) implements Serializable {

  /** The only value {@code generation.launch} takes. */
  public static final String LAUNCH_RAVEL = "ravel";
  /** {@code generation.weight_sync: native}: pause, start, update, finish, resume (vLLM's RL routes). */
  public static final String SYNC_NATIVE = "native";
  /** {@code generation.weight_sync: lora}: vLLM's runtime LoRA load/unload routes, one adapter per version. */
  public static final String SYNC_LORA = "lora";
  /** The values {@code generation.weight_sync} takes. */
  public static final List<String> WEIGHT_SYNCS = List.of(SYNC_NATIVE, SYNC_LORA);

  /** Whether new weights go through vLLM's native weight-update protocol. */
  public boolean nativeSync() {
    return SYNC_NATIVE.equals(weightSync);
  }

  /** The pause mode of a native refit: {@code keep} with in-flight updates, {@code wait} otherwise. */
  public String pauseMode() {
    return inflightUpdates ? "keep" : "wait";
  }

  public ServerBackendSpec {
    servers = List.copyOf(servers);
    adapterTag = adapterTag == null ? "" : adapterTag;
    weightSync = weightSync == null ? SYNC_NATIVE : weightSync;
    if (!WEIGHT_SYNCS.contains(weightSync)) {
      throw new ConfigException("weight_sync", "unknown value '" + weightSync + "' (valid: "
          + String.join(", ", WEIGHT_SYNCS) + ")");
    }
    if (inflightUpdates && !SYNC_NATIVE.equals(weightSync)) {
      throw new ConfigException("inflight_updates", "needs weight_sync: native (the LoRA routes cannot change the"
          + " weights of requests in flight)");
    }
    if (!adapterTag.matches("[A-Za-z0-9._-]*")) {
      throw new IllegalArgumentException("adapterTag: letters, digits, '.', '_' and '-' only, got '" + adapterTag + "'");
    }
  }

  /**
   * This spec with its weight adapters named apart by {@code tag}: a run's id and its attempt, so that two runs
   * (or a run and its resumption) on one server never load or request each other's adapters.
   */
  public ServerBackendSpec withAdapterTag(String tag) {
    return new ServerBackendSpec(servers, launch, launchCommand, connectTimeout, requestTimeout, maxInFlight, refit,
        launchTimeout, serverHeapMb, tag, weightSync, inflightUpdates, recordExchanges, refitOwner);
  }

  /** The adapter name of weight version {@code version} of model {@code model}. */
  public String adapterName(String model, long version) {
    return adapterTag.isEmpty() ? model + "-v" + version : model + "-" + adapterTag + "-v" + version;
  }

  /** Whether this worker launches its own server. */
  public boolean launches() {
    return servers.isEmpty();
  }

  /**
   * What worker {@code index} of {@code workers} is given: its {@link #shareOf share} of the servers and, when
   * servers are shared (fewer than workers), whether it is the one that drives their weight updates (worker i
   * drives server i): two workers driving one server would cross each other's update sessions.
   */
  public ServerBackendSpec forWorker(int index, int workers) {
    List<String> share = shareOf(index, workers);
    boolean owner = servers.isEmpty() || servers.size() >= workers || index < servers.size();
    return new ServerBackendSpec(share, launch, launchCommand, connectTimeout, requestTimeout, maxInFlight, refit,
        launchTimeout, serverHeapMb, adapterTag, weightSync, inflightUpdates, recordExchanges, owner);
  }

  /** This spec with only {@code subset} of the servers (a worker's share). */
  public ServerBackendSpec withServers(List<String> subset) {
    return new ServerBackendSpec(subset, launch, launchCommand, connectTimeout, requestTimeout, maxInFlight, refit,
        launchTimeout, serverHeapMb, adapterTag, weightSync, inflightUpdates, recordExchanges, refitOwner);
  }

  /**
   * The servers worker {@code index} of {@code workers} sends to: every server {@code j} with
   * {@code j % workers == index}, or, when there are fewer servers than workers, server
   * {@code index % servers}. Empty when the workers launch their own.
   */
  public List<String> shareOf(int index, int workers) {
    if (servers.isEmpty()) {
      return List.of();
    }
    if (servers.size() < workers) {
      return List.of(servers.get(index % servers.size()));
    }
    List<String> out = new ArrayList<>();
    for (int j = index; j < servers.size(); j += workers) {
      out.add(servers.get(j));
    }
    return out;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builds a {@link ServerBackendSpec}; {@link #build()} names the config key of the first bad value. */
  public static final class Builder {
    private List<String> servers = List.of();
    private String launch = "";
    private String launchCommand = "";
    private Duration connectTimeout = Duration.ofSeconds(5);
    private Duration requestTimeout = Duration.ofSeconds(120);
    private int maxInFlight = 64;
    private boolean refit = true;
    private Duration launchTimeout = Duration.ofSeconds(60);
    private int serverHeapMb = 256;
    private String weightSync = SYNC_NATIVE;
    private boolean inflightUpdates;
    private boolean recordExchanges;

    private Builder() {}

    /** A launched {@code ravel serve} records its exchanges in the run folder. */
    public Builder recordExchanges(boolean v) {
      this.recordExchanges = v;
      return this;
    }

    /** {@link #SYNC_NATIVE} (default) or {@link #SYNC_LORA}. */
    public Builder weightSync(String v) {
      this.weightSync = v == null ? SYNC_NATIVE : v.trim();
      return this;
    }

    /** Requests in flight go on under the new weights (native protocol, {@code pause?mode=keep}). */
    public Builder inflightUpdates(boolean v) {
      this.inflightUpdates = v;
      return this;
    }

    public Builder servers(List<String> v) {
      this.servers = v == null ? List.of() : v;
      return this;
    }

    public Builder launch(String v) {
      this.launch = v == null ? "" : v.trim();
      return this;
    }

    public Builder launchCommand(String v) {
      this.launchCommand = v == null ? "" : v.trim();
      return this;
    }

    public Builder connectTimeout(Duration v) {
      this.connectTimeout = v;
      return this;
    }

    public Builder requestTimeout(Duration v) {
      this.requestTimeout = v;
      return this;
    }

    public Builder maxInFlight(int v) {
      this.maxInFlight = v;
      return this;
    }

    public Builder refit(boolean v) {
      this.refit = v;
      return this;
    }

    public Builder launchTimeout(Duration v) {
      this.launchTimeout = v;
      return this;
    }

    public Builder serverHeapMb(int v) {
      this.serverHeapMb = v;
      return this;
    }

    /**
     * @throws ConfigException naming the field ({@link ConfigException#key()} is {@code servers}, {@code launch},
     *     {@code launch_command}, {@code connect_timeout_s}, ...: the run config's {@code generation.*} keys less
     *     their section, which the caller adds)
     */
    public ServerBackendSpec build() {
      List<String> urls = new ArrayList<>();
      for (String s : servers) {
        urls.add(checkUrl(s));
      }
      boolean given = !urls.isEmpty();
      boolean ravel = !launch.isEmpty();
      boolean template = !launchCommand.isEmpty();
      if (ravel && !launch.equals(LAUNCH_RAVEL)) {
        throw new ConfigException("launch", "unknown value '" + launch + "' (valid: "
            + LAUNCH_RAVEL + ", or empty with launch_command or servers)");
      }
      int ways = (given ? 1 : 0) + (ravel ? 1 : 0) + (template ? 1 : 0);
      if (ways != 1) {
        throw new ConfigException("servers", "the openai backend needs exactly one of"
            + " servers (URLs), launch: ravel, or launch_command (got "
            + (ways == 0 ? "none" : "several") + ")");
      }
      if (template && !launchCommand.contains("{port}")) {
        throw new ConfigException("launch_command", "must contain {port} (the free loopback"
            + " port the worker picks), got '" + launchCommand + "'");
      }
      positive("connect_timeout_s", connectTimeout);
      positive("request_timeout_s", requestTimeout);
      positive("launch_timeout_s", launchTimeout);
      if (maxInFlight < 1) {
        throw new ConfigException("max_in_flight", "must be at least 1, got " + maxInFlight);
      }
      if (serverHeapMb < 64) {
        throw new ConfigException("server_heap_mb", "must be at least 64, got " + serverHeapMb);
      }
      return new ServerBackendSpec(urls, launch, launchCommand, connectTimeout, requestTimeout, maxInFlight, refit,
          launchTimeout, serverHeapMb, "", weightSync, inflightUpdates, recordExchanges, true);
    }

    private static void positive(String key, Duration d) {
      if (d == null || d.isZero() || d.isNegative()) {
        throw new ConfigException(key, "must be a positive duration, got " + d);
      }
    }

    /** {@code url} without a trailing slash, if it is an http(s) URL with a host and a port. */
    static String checkUrl(String url) {
      String u = url == null ? "" : url.trim();
      URI uri;
      try {
        uri = new URI(u.endsWith("/") ? u.substring(0, u.length() - 1) : u);
      } catch (java.net.URISyntaxException e) {
        throw new ConfigException("servers", "'" + url + "' is not a URL (" + e.getReason() + ")");
      }
      if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null
          || uri.getPort() < 0) {
        throw new ConfigException("servers", "'" + url
            + "' is not an http(s)://host:port URL");
      }
      if (uri.getRawPath() != null && !uri.getRawPath().isEmpty()) {
        throw new ConfigException("servers", "'" + url
            + "' has a path; give the server's base URL (Ravel adds /v1/completions)");
      }
      return uri.toString();
    }
  }
}
