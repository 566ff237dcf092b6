package dev.ravel.it.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.driver.cluster.LocalRayHead;
import dev.ravel.driver.cluster.RayHome;
import dev.ravel.driver.jobs.DashboardUnreachableException;
import dev.ravel.driver.jobs.JobInfo;
import dev.ravel.driver.jobs.JobNotFoundException;
import dev.ravel.driver.jobs.JobStatus;
import dev.ravel.driver.jobs.JobsClient;
import dev.ravel.it.support.RavelCommand;
import dev.ravel.it.support.TestEnv;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.traces.RunTraces;
import dev.ravel.telemetry.traces.SpanRecord;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ray Jobs on a real head with its dashboard, started here on 127.0.0.1 and stopped after: a GRPO run
 * submitted with {@code bin/ravel submit run ... --wait} (the real launcher, a separate process) succeeds
 * and its logs hold the run's summary; its {@code rl.job.run} span is a child of the submitter's
 * {@code rl.job.submit}; a long job stopped while {@code --wait} follows it ends STOPPED with exit code 3;
 * unknown ids and an unreachable dashboard give typed errors and one-line CLI messages that name them.
 */
final class RayJobsIT {
  static final String RUN_ID = "it-job-" + Long.toString(System.currentTimeMillis() % 1_000_000, 36);

  @TempDir
  static Path tmp;

  static RayHome home;
  static LocalRayHead head;
  static JobsClient client;
  static Path ravel;
  static Cli submittedRun;

  /** A finished command line process. */
  record Cli(int exit, String out, String err) {}

  /**
   * A head of this class's own, not the shared one: its jobs are Ravel drivers whose end this class waits on. A
   * job's entrypoint gets its {@code RAY_ADDRESS} from Ray's record of the head started last in the head's temp
   * folder ({@code ray_current_cluster}); each head has a folder of its own ({@link LocalRayHead#tempDir()}), so
   * heads that other classes start meanwhile (side by side with this one) do not take the jobs.
   */
  @BeforeAll
  static void startHead() {
    home = RayHome.locate(TestEnv.clean());
    ravel = home.ravelHome().resolve("bin").resolve("ravel");
    assertThat(ravel).isExecutable();
    head = LocalRayHead.builder(home).dashboard(true).logDir(tmp.resolve("head")).start();
    client = JobsClient.builder().baseUrl(head.dashboardUrl().toString()).build();
  }

  @AfterAll
  static void stopHead() {
    if (head != null) {
      head.close();
    }
  }

  /**
   * Runs {@code bin/ravel args} with the tests' clean environment; bounded. Its output is read to the end of each
   * stream ({@link RavelCommand}): bin/ravel's stderr passes a filter process that may still be writing the driver's
   * last line when the JVM has exited.
   */
  static Cli ravel(Duration timeout, String... args) throws IOException, InterruptedException {
    Map<String, String> env = new java.util.HashMap<>(TestEnv.clean());
    env.put("RAVEL_RAY_VENV", home.venv().toString());
    RavelCommand.Result r = RavelCommand.run(env, timeout.toSeconds(), args);
    return new Cli(r.exitCode(), r.stdout(), r.stderr());
  }

  /** The GRPO run submitted as a job and followed to its end (once, for the tests that look at it). */
  static synchronized Cli submittedRun() throws IOException, InterruptedException {
    if (submittedRun == null) {
      submittedRun = ravel(Duration.ofMinutes(4), "submit", "run",
          home.ravelHome().resolve("examples").resolve("grpo-sync.yaml").toString(),
          "grpo.steps=2", "grpo.prompts_per_step=4", "grpo.group_size=4", "generation.workers=1",
          "cluster.worker_heap_mb=256",
          "telemetry.run_id=" + RUN_ID, "telemetry.runs_dir=" + tmp.resolve("runs"),
          "--address", head.dashboardUrl().toString(), "--submission-id", RUN_ID + "-job", "--wait");
    }
    return submittedRun;
  }

  @Test
  @Timeout(300)
  void submitRun_grpoSync_succeedsAndTheJobsLogsHoldTheRunsSummary() throws Exception {
    Cli cli = submittedRun();

    assertThat(cli.exit()).as("stderr:\n%s\nstdout:\n%s", cli.err(), cli.out()).isZero();
    assertThat(cli.out()).contains("run " + RUN_ID + " succeeded");
    assertThat(cli.err()).contains("job " + RUN_ID + "-job SUCCEEDED");
    JobInfo job = client.status(RUN_ID + "-job");
    assertThat(job.status()).isEqualTo(JobStatus.SUCCEEDED);
    assertThat(job.metadata()).containsEntry("rl.run.id", RUN_ID);
    assertThat(job.entrypoint()).startsWith(ravel + " run ");
    assertThat(client.logs(RUN_ID + "-job")).contains("run " + RUN_ID + " succeeded");
    assertThat(client.list()).extracting(JobInfo::id).contains(RUN_ID + "-job");
  }

  @Test
  @Timeout(300)
  void submitRun_traces_jobRunIsAChildOfTheSubmittersJobSubmitInOneTrace() throws Exception {
    assertThat(submittedRun().exit()).isZero();

    RunTraces traces = RunTraces.readDir(tmp.resolve("runs").resolve(RUN_ID));

    assertThat(traces.problems()).isEmpty();
    List<SpanRecord> submits = traces.named(SpanNames.JOB_SUBMIT);
    List<SpanRecord> runs = traces.named(SpanNames.JOB_RUN);
    assertThat(submits).hasSize(1);
    assertThat(runs).hasSize(1);
    SpanRecord submit = submits.get(0);
    SpanRecord run = runs.get(0);
    assertThat(submit.role()).isEqualTo("submitter");
    assertThat(submit.isRoot()).isTrue();
    assertThat(run.role()).isEqualTo("driver");
    assertThat(run.traceId()).isEqualTo(submit.traceId());
    assertThat(run.parentSpanId()).isEqualTo(submit.spanId());
    assertThat(run.process()).isNotEqualTo(submit.process());
    assertThat(run.attributes()).containsEntry("ray.job.submission_id", RUN_ID + "-job");
    assertThat(submit.runId()).isEqualTo(RUN_ID);
    assertThat(run.runId()).isEqualTo(RUN_ID);
    // each step stays a trace of its own, linked to the job's span, and the run stays fully connected
    assertThat(traces.named(SpanNames.GRPO_STEP)).isNotEmpty().allSatisfy(step -> {
      assertThat(step.isRoot()).isTrue();
      assertThat(step.links()).anySatisfy(l -> assertThat(l.spanId()).isEqualTo(run.spanId()));
    });
    assertThat(dev.ravel.telemetry.traces.TraceQuality.of(traces.spans()).connectedness()).hasValue(1.0);
  }

  @Test
  @Timeout(120)
  void submitWait_longJobStopped_endsStoppedAndTheCliExitsWithTheStoppedCode() throws Exception {
    String id = RUN_ID + "-sleep";
    List<String> cmd = List.of(ravel.toString(), "submit", "--address", head.dashboardUrl().toString(), "--wait",
        "--submission-id", id, "--", "sleep", "300");
    Path err = tmp.resolve("stop-err.txt");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(err.toFile()).redirectOutput(tmp.resolve("stop-out.txt").toFile());
    pb.environment().clear();
    pb.environment().putAll(TestEnv.clean());
    pb.environment().put("RAVEL_RAY_VENV", home.venv().toString());
    Process waiting = pb.start();
    try {
      JobStatus s = JobStatus.PENDING;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (s != JobStatus.RUNNING && System.nanoTime() < deadline) {
        Thread.sleep(250);
        try {
          s = client.status(id).status();
        } catch (JobNotFoundException notYet) {
          // the CLI has not submitted it yet
        }
      }
      assertThat(s).as("status before stop").isEqualTo(JobStatus.RUNNING);

      assertThat(client.stop(id)).isTrue();

      assertThat(client.waitFor(id, Duration.ofSeconds(30))).isEqualTo(JobStatus.STOPPED);
      assertThat(waiting.waitFor(30, TimeUnit.SECONDS)).as("the waiting CLI ended").isTrue();
      assertThat(waiting.exitValue()).as(Files.readString(err)).isEqualTo(3); // ExitCodes.STOPPED
      // bin/ravel's stderr filter may write the last line just after the JVM ended: wait for it (bounded)
      long lineDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!Files.readString(err).contains("job " + id + " STOPPED") && System.nanoTime() < lineDeadline) {
        Thread.sleep(100);
      }
      assertThat(Files.readString(err)).contains("job " + id + " STOPPED");
      assertThat(client.stop(id)).as("stop of a stopped job").isFalse();
      assertThat(client.delete(id)).isTrue();
      assertThatThrownBy(() -> client.status(id)).isInstanceOf(JobNotFoundException.class);
    } finally {
      waiting.destroy();
    }
  }

  @Test
  @Timeout(60)
  void unknownJobId_clientAndCli_nameTheId() throws Exception {
    assertThatThrownBy(() -> client.status("no-such-job")).isInstanceOfSatisfying(JobNotFoundException.class,
        e -> assertThat(e.id()).isEqualTo("no-such-job"));
    assertThatThrownBy(() -> client.logs("no-such-job")).isInstanceOf(JobNotFoundException.class);
    assertThatThrownBy(() -> client.stop("no-such-job")).isInstanceOf(JobNotFoundException.class);

    Cli cli = ravel(Duration.ofSeconds(30), "jobs", "status", "no-such-job", "--address", head.dashboardUrl().toString());

    assertThat(cli.exit()).isEqualTo(1);
    assertThat(cli.err().strip()).startsWith("ravel: no Ray job 'no-such-job' at " + head.dashboardUrl())
        .doesNotContain("\n");
  }

  @Test
  @Timeout(60)
  void unreachableDashboard_clientAndCli_nameTheUrl() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      port = s.getLocalPort();
    }
    String url = "http://127.0.0.1:" + port;
    JobsClient nowhere = JobsClient.builder().baseUrl(url).build();

    assertThatThrownBy(nowhere::list).isInstanceOfSatisfying(DashboardUnreachableException.class,
        e -> assertThat(e.url().toString()).isEqualTo(url));

    Cli cli = ravel(Duration.ofSeconds(30), "submit", "--address", url, "--", "true");

    assertThat(cli.exit()).isEqualTo(1);
    assertThat(cli.err().strip()).startsWith("ravel: Ray dashboard at " + url + " is unreachable")
        .doesNotContain("\n");
  }
}
