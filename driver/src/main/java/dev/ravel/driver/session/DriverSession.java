package dev.ravel.driver.session;

import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.jobs.JobsClient;
import dev.ravel.driver.jobs.JobsException;
import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.env.HeadEnvironment;
import dev.ravel.telemetry.env.WorkerEnvironment;
import dev.ravel.telemetry.otlp.OtlpSettings;
import dev.ravel.telemetry.sdk.ExportStats;
import dev.ravel.telemetry.sdk.ProcessTelemetry;
import dev.ravel.telemetry.spans.Spans;
import dev.ravel.workers.actor.Payload;
import dev.ravel.workers.actor.RavelActor;
import dev.ravel.workers.actor.RavelActorHandle;
import dev.ravel.workers.actor.RavelActors;
import dev.ravel.workers.actor.RavelRef;
import dev.ravel.workers.actor.RavelRole;
import dev.ravel.workers.python.PythonWire;
import io.ray.api.Ray;
import io.ray.api.function.PyActorClass;
import io.ray.api.function.RayFunc0;
import io.ray.api.function.RayFunc1;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A driver's run: validated telemetry settings (OTLP resolved once, here, failing fast), the driver's
 * process telemetry, the worker environment every actor gets, and a connection to Ray: to
 * {@code RAY_ADDRESS} when set, else to a local head on loopback that this session starts and stops.
 * Actors created through {@link #actor} get the worker environment and report their span counts when
 * the session closes.
 */
public final class DriverSession implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DriverSession.class);

  /** Where {@link #ADD_OPENS} is defined, one option a line (a JVM argument file: {@code java @<file>}). */
  public static final String ADD_OPENS_RESOURCE = "dev/ravel/driver/session/add-opens.args";

  /**
   * JDK 17 needs these on the driver and on every worker (Ray's serializer). Defined once, in
   * {@link #ADD_OPENS_RESOURCE}: {@code bin/ravel} and the build's test JVMs pass that file as an argument file,
   * the workers get its lines as job JVM options.
   */
  public static final List<String> ADD_OPENS = readAddOpens();

  /**
   * The environment variable whose options every Java worker's JVM gets after the session's own (heap, GC): what
   * {@code RAVEL_JAVA_OPTS} is to the driver's JVM. {@code -XX:TieredStopAtLevel=1} there, say, trades a worker's
   * peak speed for less CPU at its start, as short runs on a small machine want.
   */
  public static final String WORKER_JAVA_OPTS_ENV = "RAVEL_WORKER_JAVA_OPTS";

  /** The system property that, set to {@code false}, keeps this JVM's class path off the workers' by default. */
  public static final String CLASSPATH_ON_WORKERS_PROPERTY = "ravel.workers.classpath";

  private final TelemetryConfig config;
  private final OtlpSettings otlp;
  private final WorkerEnvironment workerEnv;
  private final ProcessTelemetry telemetry;
  private final LocalRayHead head;
  private final String address;
  private final CodeSearchPath codePath;
  private final List<RavelActorHandle<? extends RavelRole>> actors = new ArrayList<>();
  private final Map<String, ExportStats> actorStats = new LinkedHashMap<>();
  private final List<String> unreported = new ArrayList<>();
  private boolean closed;
  /** The session's own start-up, until the first run takes it ({@link #takeStartup()}). */
  private Startup startup;

  private DriverSession(Builder b) {
    long sessionStart = Spans.nowEpochNanos();
    Map<String, String> env = b.env;
    this.config = b.config;
    // a driver started as a Ray job by ravel submit gets the submitter's resolved settings
    this.otlp = OtlpSettings.inWorkerEnvironment(env) ? OtlpSettings.fromWorkerEnvironment(env) : OtlpSettings.resolve(env);
    this.workerEnv = WorkerEnvironment.of(config, otlp, env);
    // the code search path first: a missing entry fails here, before a secret file is written or Ray is asked
    RayHome home = RayHome.locate(env);
    List<Path> ravelPath = home.workerCodeSearchPath();
    java.util.Set<String> ravelJars = ravelJarNames(ravelPath);
    List<Path> userPath = new ArrayList<>(b.classpathOnWorkers
        ? CodeSearchPath.userClasspath(System.getProperty("java.class.path"), home.ravelHome(), ravelJars) : List.of());
    userPath.addAll(b.codeSearchPath);
    this.codePath = CodeSearchPath.of(ravelPath, userPath, home.ravelHome(), ravelJars);
    List<String> workerJvm = new ArrayList<>(b.workerJvmOptions);
    workerJvm.addAll(workerJavaOpts(env)); // a word that is not an option fails here, naming the variable
    if (!codePath.user().isEmpty()) {
      LOG.info("workers' code search path: Ravel's, then {} entr{} of yours{}", codePath.user().size(),
          codePath.user().size() == 1 ? "y" : "ies", codePath.user().size() <= 3 ? " " + codePath.user()
              : " (" + codePath.user().subList(0, 3) + " ...)");
      LOG.debug("workers' code search path, yours: {}", codePath.user());
    }
    workerEnv.writeSecretFiles();
    if (config.exporter().usesOtlp()) {
      OtlpReachability.check(otlp, 3000);
    }
    this.telemetry = ProcessTelemetry.builder(config).role("driver").otlp(otlp).start();
    LocalRayHead started = null;
    long rayStart = Spans.nowEpochNanos();
    try {
      String addr = b.address != null ? b.address : env.getOrDefault("RAY_ADDRESS", "");
      if (addr.isEmpty()) {
        // the head and every process it starts inherit this: no OTLP endpoint, header or CA of the driver's
        HeadEnvironment headEnv = HeadEnvironment.of(config, env);
        if (!headEnv.heldBack().isEmpty() || !headEnv.passed().isEmpty()) {
          LOG.info("local Ray head environment: {}", headEnv.summary());
        }
        LocalRayHead.Builder hb = LocalRayHead.builder(home).environment(headEnv.variables());
        if (!env.containsKey(LocalRayHead.AUTH_MODE_ENV)) {
          // Ray 2.5x turns token auth on for a new head whenever ~/.ray/auth_token exists (any local ray.init()
          // writes one); Ravel's clients send no token, and its own head listens on loopback only
          hb.env(LocalRayHead.AUTH_MODE_ENV, "disabled");
        }
        b.headEnv.forEach(hb::env);
        if (b.numCpus > 0) {
          hb.numCpus(b.numCpus);
        }
        started = hb.start();
        addr = started.address();
      }
      this.address = addr;
      this.head = started;
      // a driver of another Ray release than the cluster's fails inside Ray.init() with an NPE: say so first
      URI dashboard = started != null ? started.dashboardUrl()
          : ClusterDashboard.find(addr, env, home.venv());
      RayVersions.check(addr, dashboard);
      connect(addr, started != null ? Optional.of("127.0.0.1") : nodeAddress(addr, dashboard), codePath.entries(),
          workerJvm);
      if (started == null) {
        RunsDirCheck.verify(config.runDir()); // a cluster Ravel did not start may not share the driver's files
      }
      this.startup = new Startup(sessionStart, rayStart, Spans.nowEpochNanos(),
          started != null);
    } catch (RuntimeException | Error e) {
      // for example Ray.init() failing on a jar or native-library mismatch: leave no head running
      if (Ray.isInitialized()) {
        try {
          Ray.shutdown();
        } catch (RuntimeException shutdown) {
          e.addSuppressed(shutdown);
        }
      }
      telemetry.close();
      if (started != null) {
        started.close();
      }
      throw e;
    }
    LOG.info("run {}: Ray at {}, exporter {}, otlp {}", config.runId(), address, config.exporter().configName(),
        config.exporter().usesOtlp() ? otlp : "unused");
  }

  private static List<String> readAddOpens() {
    try (java.io.InputStream in = DriverSession.class.getClassLoader().getResourceAsStream(ADD_OPENS_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("classpath resource " + ADD_OPENS_RESOURCE + " is missing from the driver jar");
      }
      return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).lines().map(String::strip)
          .filter(l -> !l.isEmpty()).toList();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("cannot read " + ADD_OPENS_RESOURCE, e);
    }
  }

  /** The file names of Ravel's own jars: those on its part of the path and those in its folders there. */
  private static java.util.Set<String> ravelJarNames(List<Path> ravelPath) {
    java.util.Set<String> names = new java.util.HashSet<>();
    for (Path p : ravelPath) {
      if (java.nio.file.Files.isDirectory(p)) {
        try (var files = java.nio.file.Files.list(p)) {
          files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".jar")).forEach(names::add);
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException("cannot list " + p, e);
        }
      } else if (p.getFileName() != null) {
        names.add(p.getFileName().toString());
      }
    }
    return names;
  }

  /**
   * Starts building a session with the telemetry settings {@code config}.
   *
   * @param config the run's telemetry settings (run id, runs folder, exporters, sampling)
   * @return a builder whose {@link Builder#start()} starts the session
   */
  public static Builder builder(TelemetryConfig config) {
    return new Builder(config);
  }

  /**
   * The address of this machine's node in the cluster at {@code address}, from the cluster's own list of its nodes;
   * empty when the dashboard cannot say (then a loopback GCS address means a loopback node, as for Ravel's heads).
   */
  private static Optional<String> nodeAddress(String address, URI dashboard) {
    List<String> nodes;
    try {
      nodes = JobsClient.builder().baseUrl(dashboard).connectTimeout(Duration.ofSeconds(3))
          .requestTimeout(Duration.ofSeconds(5)).build().aliveNodeAddresses();
    } catch (JobsException | IllegalArgumentException e) {
      LOG.warn("could not list the cluster's nodes at {} ({}); the driver's node address is Ray's guess", dashboard,
          e.getMessage());
      nodes = List.of();
    }
    Optional<String> chosen = NodeAddress.choose(address, nodes, NodeAddress.localAddresses());
    if (chosen.isEmpty()) {
      String host = NodeAddress.hostOf(address);
      return host.equals("127.0.0.1") || host.equals("localhost") ? Optional.of("127.0.0.1") : Optional.empty();
    }
    return chosen;
  }

  /**
   * The options {@value #WORKER_JAVA_OPTS_ENV} adds to every Java worker's JVM (after the builder's), split at
   * whitespace as a shell splits {@code RAVEL_JAVA_OPTS} for the driver's.
   *
   * @throws ConfigException when a word is not an option (does not start with {@code -}), naming it
   */
  static List<String> workerJavaOpts(Map<String, String> env) {
    String value = env.getOrDefault(WORKER_JAVA_OPTS_ENV, "").strip();
    if (value.isEmpty()) {
      return List.of();
    }
    List<String> words = List.of(value.split("\\s+"));
    for (String w : words) {
      if (!w.startsWith("-")) {
        throw new ConfigException(WORKER_JAVA_OPTS_ENV, "'" + w + "' is not a JVM option (each word must start"
            + " with '-', such as -XX:TieredStopAtLevel=1)");
      }
    }
    return words;
  }

  private static void connect(String address, Optional<String> nodeIp, List<Path> codePath, List<String> workerJvm) {
    System.setProperty("ray.address", address);
    nodeIp.ifPresent(ip -> System.setProperty("ray.node-ip", ip));
    System.setProperty("ray.job.code-search-path",
        codePath.stream().map(Path::toString).collect(Collectors.joining(":")));
    List<String> jvm = new ArrayList<>(ADD_OPENS);
    jvm.addAll(workerJvm);
    for (int i = 0; i < jvm.size(); i++) {
      System.setProperty("ray.job.jvm-options." + i, jvm.get(i));
    }
    Ray.init();
    dev.ravel.driver.cluster.NativeLibraryCopy.removeOwn(); // 40 MB that Ray copies for each driver process and never removes
  }

  /**
   * When this session began and when it started a local Ray head or connected to a cluster (epoch nanoseconds, from
   * {@link dev.ravel.telemetry.spans.Spans#nowEpochNanos()}): what a run's start-up trace draws before its actors
   * ({@code rl.run.startup}, {@code rl.run.ray}; docs/design.md, "Span placement").
   *
   * @param sessionStartNanos when the session's construction began (its telemetry started just after)
   * @param rayStartNanos when it began starting or connecting to Ray
   * @param rayReadyNanos when the driver was connected (and a cluster's run folder checked)
   * @param headStarted whether the session started a local head (rather than connect to a running cluster)
   */
  public record Startup(long sessionStartNanos, long rayStartNanos, long rayReadyNanos, boolean headStarted) {}

  /**
   * {@return the session's own start-up, given once: to the session's first run, whose start-up trace begins with it;
   * empty after that (a later run on the same session started nothing of Ray's)}
   */
  public synchronized Optional<Startup> takeStartup() {
    Optional<Startup> s = Optional.ofNullable(startup);
    startup = null;
    return s;
  }

  /**
   * Creates an actor with the run's worker environment; the session flushes it on close.
   *
   * @param <A> the actor's class
   * @param <I> its role interface
   * @param ctor the actor's no-argument constructor, as a method reference ({@code EchoActor::new})
   * @param role the role interface, annotated {@link dev.ravel.workers.actor.ActorRole}
   * @return the creator: options, then {@link Creator#remote()}
   * @throws IllegalArgumentException when the actor's class is not on the workers' code search path (naming the
   *     class and the path), or {@code role} is not an {@code @ActorRole} interface
   */
  public <A extends RavelActor, I extends RavelRole> Creator<I> actor(RayFunc0<A> ctor, Class<I> role) {
    codePath.checkJava(ctor);
    return new Creator<>(RavelActors.actor(ctor, role).env(workerEnv));
  }

  /**
   * As {@link #actor(RayFunc0, Class)} for a constructor that takes one argument as a {@link Payload} (Java
   * serialization: records and immutable collections survive the trip; so do handles on other actors).
   *
   * @param <A> the actor's class
   * @param <T> the argument's type
   * @param <I> its role interface
   * @param ctor the actor's constructor, as a method reference ({@code FrontActor::new})
   * @param arg the constructor's argument
   * @param role the role interface, annotated {@link dev.ravel.workers.actor.ActorRole}
   * @return the creator: options, then {@link Creator#remote()}
   * @throws IllegalArgumentException as {@link #actor(RayFunc0, Class)}
   */
  public <A extends RavelActor, T, I extends RavelRole> Creator<I> actor(RayFunc1<Payload<T>, A> ctor, T arg,
      Class<I> role) {
    codePath.checkJava(ctor);
    return new Creator<>(RavelActors.actor(ctor, arg, role).env(workerEnv));
  }

  /**
   * Creates a Python actor of your own: the {@code @ray.remote} class {@code className} of the module {@code module}
   * (a subclass of {@code ravel_workers.api.RoleActor}, in a folder of the code search path), built from
   * {@code spec} (a string its constructor gets), called through {@code role} (an {@code @ActorRole} interface
   * whose methods are the Python class's in camel case). Arguments and results take their JSON wire form
   * ({@link dev.ravel.workers.actor.JsonWire}); a Python exception reaches the caller as a
   * {@link dev.ravel.workers.actor.PythonWorkerException}. The session flushes it on close.
   *
   * @param <I> the role interface
   * @param module the Python module ({@code pkg.mod}) in a folder of the code search path
   * @param className the {@code @ray.remote} class in it
   * @param spec the constructor's one argument (JSON, say)
   * @param role the role interface, annotated {@link dev.ravel.workers.actor.ActorRole}
   * @return the creator: options, then {@link Creator#remote()}
   * @throws IllegalArgumentException when the module is in no folder of the code search path (naming it and the
   *     path)
   */
  public <I extends RavelRole> Creator<I> pythonActor(String module, String className, String spec, Class<I> role) {
    codePath.checkPython(module);
    return pythonActor(PyActorClass.of(module, className), spec, role);
  }

  /** {@return the workers' code search path: Ravel's own entries, then yours} */
  public List<Path> codeSearchPath() {
    return codePath.entries();
  }

  /**
   * Creates a Python actor of role {@code role} with the run's worker environment, without checking where its
   * module is (as {@link #pythonActor(String, String, String, Class)} does); the session flushes it on close like a
   * Java actor.
   *
   * @param <I> the role interface
   * @param actorClass the {@code @ray.remote} class
   * @param spec the constructor's one argument
   * @param role the role interface, annotated {@link dev.ravel.workers.actor.ActorRole}
   * @return the creator: options, then {@link Creator#remote()}
   */
  public <I extends RavelRole> Creator<I> pythonActor(PyActorClass actorClass, String spec, Class<I> role) {
    return new Creator<>(RavelActors.python(actorClass, spec, role, PythonWire.INSTANCE).env(workerEnv));
  }

  /** {@return the run's telemetry settings} */
  public TelemetryConfig config() {
    return config;
  }

  /** {@return the OTLP settings, resolved once from the environment when the session started} */
  public OtlpSettings otlp() {
    return otlp;
  }

  /** {@return the environment every actor gets: telemetry settings, masked {@code OTEL_*} variables} */
  public WorkerEnvironment workerEnvironment() {
    return workerEnv;
  }

  /** {@return the driver process's telemetry} */
  public ProcessTelemetry telemetry() {
    return telemetry;
  }

  /** {@return the driver's span helper: {@code try (var s = session.spans().start(group, "name")) ...}} */
  public Spans spans() {
    return telemetry.spans();
  }

  /** {@return the Ray address ({@code 127.0.0.1:port} for a local head)} */
  public String address() {
    return address;
  }

  /** {@return the head this session started, if it started one} */
  public java.util.Optional<LocalRayHead> head() {
    return java.util.Optional.ofNullable(head);
  }

  /**
   * Span counts reported by each actor when the session closed, keyed by actor: what an actor could not
   * export by the shutdown deadline counted as dropped.
   *
   * @return the counts by actor (empty before {@link #close()})
   */
  public Map<String, ExportStats> actorStats() {
    return actorStats;
  }

  /** {@return the actors that did not report their span counts when the session closed (in no count)} */
  public List<String> unreportedActors() {
    return List.copyOf(unreported);
  }

  /**
   * The run's span counts once the session closed: the driver's and every reporting actor's, exporter by
   * exporter, each adding up ({@code ended = exported + failed + dropped}).
   *
   * @return the sum of the driver's counts and every reporting actor's
   */
  public ExportStats spanTotals() {
    ExportStats sum = telemetry.stats();
    for (ExportStats s : actorStats.values()) {
      sum = sum.plus(s);
    }
    return sum;
  }

  /**
   * Flushes every actor's spans and the driver's at once, under one deadline (the telemetry's shutdown
   * timeout, for all of them together), records their counts (what was not exported by then counted as
   * dropped), disconnects from Ray and stops the head this session started. Never throws.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    long timeout = config.shutdownTimeout().toMillis();
    long deadline = System.nanoTime() + timeout * 1_000_000L;
    // the driver's own spans flush meanwhile, not after the actors'
    java.util.concurrent.CompletableFuture<Boolean> driverFlush = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> telemetry.flush(java.time.Duration.ofMillis(timeout)));
    List<RavelRef<ExportStats>> refs = new ArrayList<>();
    for (RavelActorHandle<? extends RavelRole> a : actors) {
      try {
        refs.add(flushCall(a, timeout));
      } catch (RuntimeException e) {
        LOG.warn("actor {} could not be asked to flush its telemetry: {}", a, e.toString());
        refs.add(null);
      }
    }
    for (int i = 0; i < refs.size(); i++) {
      if (refs.get(i) == null) {
        unreported.add(actors.get(i).toString());
        continue;
      }
      try {
        // an actor flushes for at most the timeout; the reply gets a moment beyond the common deadline
        long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000L) + REPLY_GRACE_MS;
        ExportStats s = refs.get(i).get(left).closed(); // its process ends with the run: the rest is lost
        actorStats.put(actors.get(i).toString(), s);
        if (s.exporters().values().stream().anyMatch(e -> e.failed() > 0 || e.dropped() > 0)) {
          LOG.warn("actor {} telemetry: {}", actors.get(i), s);
        }
      } catch (RuntimeException e) {
        unreported.add(actors.get(i).toString());
        LOG.warn("actor {} did not report its telemetry: {}", actors.get(i), e.toString());
      }
    }
    try {
      driverFlush.get(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L) + REPLY_GRACE_MS,
          java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      LOG.debug("the driver's flush did not end by the deadline: {}", e.toString());
    }
    telemetry.close(java.time.Duration.ofMillis(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L)));
    try {
      Ray.shutdown();
    } catch (RuntimeException e) {
      LOG.warn("Ray shutdown: {}", e.toString());
    }
    for (Path file : workerEnv.secretFilePaths()) {
      try {
        java.nio.file.Files.deleteIfExists(file);
      } catch (java.io.IOException | RuntimeException e) {
        LOG.warn("could not delete {}: {}", file, e.toString());
      }
    }
    if (head != null) {
      try {
        head.close();
      } catch (RuntimeException e) {
        LOG.warn("stopping the Ray head {} failed: {}", head.pid(), e.toString());
      }
    }
  }

  /** How long past the common flush deadline an actor's reply is waited for. */
  private static final long REPLY_GRACE_MS = 2_000L;

  @SuppressWarnings("unchecked")
  private static RavelRef<ExportStats> flushCall(RavelActorHandle<? extends RavelRole> a, long timeout) {
    RavelActorHandle<RavelRole> h = (RavelActorHandle<RavelRole>) a;
    return h.call(RavelRole::flushTelemetry, timeout);
  }

  /**
   * Options of an actor created through the session, each checked when given (a refusal names the option), then
   * {@link #remote()}.
   *
   * @param <I> the actor's role interface
   */
  public final class Creator<I extends RavelRole> {
    private final RavelActors.Creator<I> creator;

    private Creator(RavelActors.Creator<I> creator) {
      this.creator = creator;
    }

    /**
     * One more environment variable for this actor, after the run's worker environment (so it may override one).
     * Secrets belong in the telemetry settings, which keep them out of logs and spans.
     *
     * @param name the variable
     * @param value its value (empty masks a variable the node's environment has)
     * @return this creator
     * @throws IllegalArgumentException when {@code name} is blank or holds {@code =}, or {@code value} is null
     */
    public Creator<I> env(String name, String value) {
      creator.env(name, value);
      return this;
    }

    /**
     * Up to {@code n} calls served at once, on threads of the actor's process (the role's methods must be
     * thread-safe); 1, the default, serves them one at a time.
     *
     * @param n the number of calls at once
     * @return this creator
     * @throws IllegalArgumentException when {@code n < 1}
     */
    public Creator<I> maxConcurrency(int n) {
      creator.maxConcurrency(n);
      return this;
    }

    /**
     * How often Ray restarts the actor when its process or node dies; a restarted actor starts from its constructor.
     *
     * @param n the restarts ({@code -1}: without limit; 0, the default: never)
     * @return this creator
     * @throws IllegalArgumentException when {@code n < -1}
     */
    public Creator<I> maxRestarts(int n) {
      creator.maxRestarts(n);
      return this;
    }

    /**
     * The actor's name in the job's namespace: how a Python actor finds a Java one
     * ({@code ravel_workers.api.java_actor(name)}).
     *
     * @param name the name, unique among the job's live actors
     * @return this creator
     * @throws IllegalArgumentException when {@code name} is blank
     */
    public Creator<I> name(String name) {
      creator.name(name);
      return this;
    }

    /**
     * JVM options of a Java actor's process, after the session's worker options.
     *
     * @param options the options, such as {@code -Xmx2g}
     * @return this creator
     * @throws IllegalStateException for a Python actor
     */
    public Creator<I> jvmOptions(List<String> options) {
      creator.jvmOptions(options);
      return this;
    }

    /**
     * In bundle {@code bundle} of the placement group {@code group}: the actor's resources come from the bundle.
     *
     * @param group a placement group made through Ray's API
     * @param bundle the bundle's index, from 0
     * @return this creator
     * @throws IllegalArgumentException when {@code bundle < 0}
     */
    public Creator<I> placementGroup(io.ray.api.placementgroup.PlacementGroup group, int bundle) {
      creator.placementGroup(group, bundle);
      return this;
    }

    /**
     * {@code amount} of the resource {@code name}: Ray's {@code CPU} or {@code memory}, or a custom one such as a
     * node's. Ray places the actor on a node that has it free; a resource no node has leaves it pending.
     *
     * @param name the resource
     * @param amount how much, above 0
     * @return this creator
     * @throws IllegalArgumentException when {@code name} is blank, holds whitespace or is {@code GPU} (see
     *     {@link #gpus}), or {@code amount} is not finite and positive
     */
    public Creator<I> resource(String name, double amount) {
      creator.resource(name, amount);
      return this;
    }

    /**
     * Each of {@code resources}, as {@link #resource}.
     *
     * @param resources amounts by resource name
     * @return this creator
     * @throws IllegalArgumentException as {@link #resource}
     */
    public Creator<I> resources(Map<String, Double> resources) {
      resources.forEach(creator::resource);
      return this;
    }

    /**
     * GPUs the actor holds (Ray's {@code GPU} resource; fractions share one).
     *
     * @param n the GPUs; 0 asks for none
     * @return this creator
     * @throws IllegalArgumentException when {@code n} is negative or not finite
     */
    public Creator<I> gpus(double n) {
      creator.gpus(n);
      return this;
    }

    /**
     * Creates the actor on Ray; the session asks it for its span counts when it closes.
     *
     * @return a typed handle: {@code handle.call(Role::method, args...)}
     */
    public RavelActorHandle<I> remote() {
      RavelActorHandle<I> h = creator.remote();
      actors.add(h);
      return h;
    }
  }

  /** Builds a {@link DriverSession}. */
  public static final class Builder {
    private final TelemetryConfig config;
    private Map<String, String> env = System.getenv();
    private String address;
    private final Map<String, String> headEnv = new LinkedHashMap<>();
    private int numCpus;
    private List<String> workerJvmOptions = List.of("-Xmx512m", "-XX:+UseSerialGC");
    private final List<Path> codeSearchPath = new ArrayList<>();
    private boolean classpathOnWorkers = !"false".equals(System.getProperty(CLASSPATH_ON_WORKERS_PROPERTY));

    private Builder(TelemetryConfig config) {
      this.config = Objects.requireNonNull(config, "config");
    }

    /**
     * The environment OTLP settings, {@code RAY_ADDRESS}, {@code RAVEL_HOME} and pass-through variables are read
     * from (default: this process's).
     *
     * @param env the variables
     * @return this builder
     */
    public Builder env(Map<String, String> env) {
      this.env = Map.copyOf(env);
      return this;
    }

    /**
     * Connect to this Ray address ({@code host:port} of the cluster's GCS) instead of {@code RAY_ADDRESS} or a local
     * head.
     *
     * @param address the GCS address
     * @return this builder
     * @throws IllegalArgumentException when {@code address} is blank
     */
    public Builder address(String address) {
      if (address == null || address.isBlank()) {
        throw new IllegalArgumentException("address: must not be blank (host:port of the cluster's GCS)");
      }
      this.address = address;
      return this;
    }

    /**
     * An environment variable of a local head's processes (as if exported where {@code ray start} ran).
     *
     * @param name the variable
     * @param value its value
     * @return this builder
     * @throws IllegalArgumentException when {@code name} is blank or holds {@code =}, or {@code value} is null
     */
    public Builder headEnv(String name, String value) {
      if (name == null || name.isBlank() || name.contains("=")) {
        throw new IllegalArgumentException("headEnv: not a variable name: '" + name + "'");
      }
      if (value == null) {
        throw new IllegalArgumentException("headEnv " + name + ": the value is null");
      }
      headEnv.put(name, value);
      return this;
    }

    /**
     * Logical CPUs of a local head.
     *
     * @param n the CPUs Ray may hand out (default: as many as the machine has)
     * @return this builder
     * @throws IllegalArgumentException when {@code n < 1}
     */
    public Builder numCpus(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("numCpus: must be >= 1, got " + n);
      }
      this.numCpus = n;
      return this;
    }

    /**
     * JVM options of every Java worker (after the required {@code --add-opens}).
     *
     * @param options the options (default {@code -Xmx512m -XX:+UseSerialGC})
     * @return this builder
     */
    public Builder workerJvmOptions(List<String> options) {
      this.workerJvmOptions = List.copyOf(options);
      return this;
    }

    /**
     * Your code for the workers: jars, class folders (Java roles) and folders of Python modules (Python roles), put
     * on Ray's code search path after Ravel's own and after the entries of this JVM's class path that are not
     * Ravel's or Ray's ({@link #classpathOnWorkers}). On a cluster, every node must have these paths.
     *
     * @param paths the entries; each must exist when the session starts
     * @return this builder
     * @throws NullPointerException for a null entry
     */
    public Builder codeSearchPath(List<Path> paths) {
      paths.forEach(p -> codeSearchPath.add(Objects.requireNonNull(p, "codeSearchPath entry")));
      return this;
    }

    /**
     * Whether the entries of this JVM's class path that are not Ravel's or Ray's (your application's classes and
     * libraries) go on the workers' code search path; on unless the system property
     * {@value DriverSession#CLASSPATH_ON_WORKERS_PROPERTY} is {@code false} (as in Ravel's own integration tests,
     * whose class path is the test runner's).
     *
     * @param on whether they do
     * @return this builder
     */
    public Builder classpathOnWorkers(boolean on) {
      this.classpathOnWorkers = on;
      return this;
    }

    /**
     * Starts the session: validates the telemetry settings, starts or connects to Ray, and checks the cluster.
     *
     * @return the session; close it to flush every actor's spans and stop the head it started
     * @throws IllegalArgumentException naming a code search path entry that does not exist
     * @throws IllegalStateException when Ray cannot be started or reached (the cause says why)
     */
    public DriverSession start() {
      return new DriverSession(this);
    }
  }
}
