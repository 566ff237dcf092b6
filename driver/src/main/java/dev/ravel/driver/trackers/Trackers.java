package dev.ravel.driver.trackers;

import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.config.TrackerKind;
import dev.ravel.telemetry.runs.StepRecord;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The experiment trackers of a run ({@code telemetry.trackers}): each step's numbers go, as the step ends, to an
 * MLflow tracking server ({@code mlflow}) and to TensorBoard event files under {@code runs/<run-id>/tensorboard/}
 * ({@code tensorboard}), beside the run folder's {@code steps.jsonl}. Their settings are checked at
 * {@link #open}, before the run starts; after that a tracker never fails or holds back a step: each works on a
 * thread of its own from a bounded queue, its first failure is reported once (through the {@code warn} given to
 * {@link #open}) and every step is counted as sent, failed or dropped ({@link #json()}, {@code run.json}'s
 * {@code telemetry.trackers}). {@link #close} delivers what is queued and ends the trackers' runs within
 * {@link #CLOSE_TIMEOUT}.
 */
public final class Trackers implements AutoCloseable {
  /** The bound on {@link #close}: delivering what is queued and ending the trackers' runs, all trackers at once. */
  public static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

  private static final Trackers NONE = new Trackers(List.of());

  private final List<SinkWorker> workers;
  private boolean closed;

  private Trackers(List<SinkWorker> workers) {
    this.workers = workers;
  }

  /** {@return trackers that track nothing} */
  public static Trackers none() {
    return NONE;
  }

  /**
   * The {@code mlflow} tracker's settings a submitted run's job gets from its submitter: where the server is, not
   * who may write to it (credentials do not travel: Ray keeps a job's environment and serves it back).
   */
  public static final java.util.List<String> FORWARDED_TO_JOBS = java.util.List.of(MlflowSink.URI_ENV,
      MlflowSink.EXPERIMENT_ENV);

  /**
   * Checks the {@code mlflow} tracker's settings in {@code env}, when {@code telemetry} lists it.
   *
   * @param telemetry the run's telemetry config
   * @param env the environment the run's driver will have
   * @throws dev.ravel.telemetry.config.ConfigException naming the variable of a missing or invalid setting
   */
  public static void checkMlflow(TelemetryConfig telemetry, Map<String, String> env) {
    if (telemetry.trackers().contains(TrackerKind.MLFLOW)) {
      MlflowSink.trackingUri(env);
      MlflowSink.authorization(env);
    }
  }

  /**
   * Checks the settings of {@code telemetry}'s trackers without starting any: with {@code mlflow} listed,
   * {@code MLFLOW_TRACKING_URI} must be an http(s) URL and a user name must come with its password; with
   * {@code tensorboard} listed, {@code python} must import TensorBoard's writer.
   *
   * @param telemetry the run's telemetry config
   * @param env the driver's environment
   * @param python the interpreter of the TensorBoard writer (the Ray virtualenv's)
   * @throws dev.ravel.telemetry.config.ConfigException naming the variable or key of a missing or invalid setting
   */
  public static void check(TelemetryConfig telemetry, Map<String, String> env, Path python) {
    checkMlflow(telemetry, env);
    if (telemetry.trackers().contains(TrackerKind.TENSORBOARD)) {
      TensorBoardSink.checkPython(python);
    }
  }

  /**
   * Checks the settings of {@code telemetry}'s trackers in {@code env} and starts them (each gets ready on its own
   * thread: creating the MLflow run, starting the TensorBoard writer; a failure there is a tracker failure, counted,
   * not the run's).
   *
   * @param telemetry the run's telemetry config: its trackers and run folder
   * @param env the driver's environment ({@code MLFLOW_TRACKING_URI}, {@code MLFLOW_EXPERIMENT_NAME}, credentials)
   * @param config the run's resolved config, the MLflow run's params
   * @param gitCommit Ravel's git commit, a tag of the MLflow run
   * @param python the interpreter of the TensorBoard writer (the Ray virtualenv's, which has {@code tensorboard})
   * @param ravelHome the checkout, whose {@code workers/src/main/python} holds the writer
   * @param warn where each tracker's first failure is reported, one line
   * @return the trackers; {@link #none()}'s when the config lists none
   * @throws dev.ravel.telemetry.config.ConfigException naming the variable of a missing or invalid MLflow setting
   */
  public static Trackers open(TelemetryConfig telemetry, Map<String, String> env, Map<String, Object> config,
      String gitCommit, Path python, Path ravelHome, Consumer<String> warn) {
    Objects.requireNonNull(warn, "warn");
    List<Sink> sinks = new ArrayList<>();
    for (TrackerKind k : telemetry.trackers()) {
      sinks.add(switch (k) {
        case MLFLOW -> MlflowSink.create(env, telemetry.runId(), gitCommit, config);
        case TENSORBOARD -> new TensorBoardSink(python, ravelHome.resolve("workers/src/main/python"),
            telemetry.runDir());
      });
    }
    return start(sinks, warn);
  }

  /** Trackers of {@code sinks}, started. */
  static Trackers start(List<Sink> sinks, Consumer<String> warn) {
    if (sinks.isEmpty()) {
      return NONE;
    }
    List<SinkWorker> workers = sinks.stream().map(s -> new SinkWorker(s, warn)).toList();
    workers.forEach(SinkWorker::start);
    return new Trackers(workers);
  }

  /** Hands step {@code m} to every tracker without waiting. */
  public void step(StepRecord m) {
    for (SinkWorker w : workers) {
      w.offer(m);
    }
  }

  /**
   * Delivers what is queued and ends each tracker's run with the Ravel run's {@code status}, all trackers at once,
   * within {@link #CLOSE_TIMEOUT}; what a tracker has not delivered by then is counted as dropped. Once only.
   *
   * @param status the run's status as {@code run.json} spells it: {@code succeeded}, {@code failed}, {@code interrupted}
   */
  public synchronized void close(String status) {
    if (closed) {
      return;
    }
    closed = true;
    long deadline = System.nanoTime() + CLOSE_TIMEOUT.toNanos();
    List<Thread> closing = new ArrayList<>();
    for (SinkWorker w : workers) {
      Thread t = new Thread(() -> w.close(status, deadline), "ravel-tracker-close-" + w.name());
      t.setDaemon(true);
      t.start();
      closing.add(t);
    }
    for (Thread t : closing) {
      try {
        t.join(CLOSE_TIMEOUT.toMillis() + 5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** As {@link #close(String)} with status {@code failed}: for a run that ended without saying how. */
  @Override
  public void close() {
    close("failed");
  }

  /** {@return whether any tracker is on} */
  public boolean any() {
    return !workers.isEmpty();
  }

  /**
   * Each tracker's counts, for {@code run.json}'s {@code telemetry.trackers}: {@code steps} (handed to it) =
   * {@code sent} + {@code failed} + {@code dropped}, its {@code errors} and {@code first_error}, and what it
   * wrote to (the MLflow run's id, the event folder).
   *
   * @return the counts by tracker name, in the config's order
   */
  public Map<String, Object> json() {
    Map<String, Object> m = new LinkedHashMap<>();
    workers.forEach(w -> m.put(w.name(), w.json()));
    return m;
  }

  /** {@return one line for the end of the run, e.g. {@code trackers: mlflow 3/3 steps sent; tensorboard 3/3 steps sent}} */
  public String summary() {
    List<String> parts = new ArrayList<>();
    for (SinkWorker w : workers) {
      long[] c = w.counts();
      String s = w.name() + " " + c[1] + "/" + c[0] + " steps sent";
      if (c[2] + c[3] > 0) {
        s += " (" + c[2] + " failed, " + c[3] + " dropped)";
      }
      parts.add(s);
    }
    return "trackers: " + String.join("; ", parts);
  }
}
