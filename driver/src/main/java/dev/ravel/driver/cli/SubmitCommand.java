package dev.ravel.driver.cli;

import dev.ravel.driver.jobs.JobInfo;
import dev.ravel.driver.jobs.JobRequest;
import dev.ravel.driver.jobs.JobStatus;
import dev.ravel.driver.jobs.JobsClient;
import dev.ravel.driver.jobs.RunSubmission;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ravel submit [options] -- <entrypoint...>} and {@code ravel submit run <config.yaml> [overrides...]
 * [options]}: submit a Ray job through the dashboard's Jobs API. With {@code --wait}, the job's output
 * streams to stdout and the exit code is the job's outcome ({@link ExitCodes}): 0 succeeded, 1 failed, 3
 * stopped, 4 still running when {@code --timeout} passed (2 is a usage or configuration error).
 */
@Command(name = "submit", mixinStandardHelpOptions = true, subcommands = SubmitCommand.Run.class,
    description = {"Submit a Ray job through the dashboard's Jobs API.",
        "  ravel submit [options] -- <entrypoint...>   a shell command (one word is",
        "                                              used as a whole command line)",
        "  ravel submit run <config.yaml> [overrides]  a GRPO run (see 'submit run -h')",
        "Without --wait, prints the submission id and returns."},
    exitCodeListHeading = "%nExit codes with --wait:%n",
    exitCodeList = {"0:the job succeeded", "1:the job failed (or ravel could not submit it)",
        "2:a usage or configuration error (nothing was submitted)", "3:the job was stopped",
        "4:the job was still running when --timeout passed"})
final class SubmitCommand implements Callable<Integer> {
  static final int EXIT_SUCCEEDED = ExitCodes.OK;
  static final int EXIT_FAILED = ExitCodes.FAILED;
  static final int EXIT_STOPPED = ExitCodes.STOPPED;
  static final int EXIT_TIMED_OUT = ExitCodes.TIMED_OUT;

  @Mixin
  Options options = new Options();

  @Parameters(paramLabel = "ENTRYPOINT", arity = "0..*",
      description = "The command to run on the head node (after --).")
  List<String> entrypoint = new ArrayList<>();

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    if (entrypoint.isEmpty()) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "give the job's command after --, e.g. 'ravel submit -- python job.py', or use 'ravel submit run CONFIG'");
    }
    Options o = options;
    JobRequest.Builder b = JobRequest.builder().command(entrypoint).metadata(o.metadata).envVars(o.env);
    if (o.submissionId != null) {
      b.submissionId(o.submissionId);
    }
    if (o.cpus != null) {
      b.entrypointNumCpus(o.cpus);
    }
    if (o.gpus != null) {
      b.entrypointNumGpus(o.gpus);
    }
    JobsClient client = o.client();
    String id = client.submit(b.build()).submissionId();
    System.err.println("ravel: submitted job " + id + " to " + client.baseUrl());
    return finish(client, id, o, System.out);
  }

  /** Prints the id, or follows the job to its end and maps its status to the exit code. */
  static int finish(JobsClient client, String id, Options o, PrintStream out) {
    if (!o.isWait()) {
      out.println(id);
      System.err.println("ravel: follow it with: ravel jobs logs " + id + " --follow --address " + client.baseUrl());
      return 0;
    }
    return follow(client, id, o.timeout(), out);
  }

  /** Streams the job's output to {@code out} until it ends; returns the exit code for its status. */
  static int follow(JobsClient client, String id, Duration timeout, PrintStream out) {
    JobStatus s = client.followLogs(id, line -> {
      out.println(line);
      out.flush();
    }, timeout);
    if (!s.isTerminal()) {
      System.err.println("ravel: job " + id + " is still " + s + " after " + timeout.toSeconds() + " s");
      return EXIT_TIMED_OUT;
    }
    JobInfo info = client.status(id);
    String detail = info.status() == JobStatus.FAILED ? ": " + firstLine(info.message()) : "";
    System.err.println("ravel: job " + id + " " + info.status() + detail);
    return exitCode(info.status());
  }

  static int exitCode(JobStatus s) {
    return switch (s) {
      case SUCCEEDED -> EXIT_SUCCEEDED;
      case FAILED -> EXIT_FAILED;
      case STOPPED -> EXIT_STOPPED;
      case PENDING, RUNNING -> EXIT_TIMED_OUT;
    };
  }

  private static String firstLine(String s) {
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }

  /** Options of both forms; given on either {@code submit} or {@code submit run}. */
  static final class Options {
    @Option(names = "--address", paramLabel = "URL",
        description = "Ray dashboard (Jobs API) URL (default http://127.0.0.1:8265).")
    String address;

    @Option(names = "--wait", description = "Stream the job's output and exit with its outcome (see exit codes).")
    Boolean wait;

    @Option(names = "--timeout", paramLabel = "SECONDS",
        description = "With --wait: how long to follow the job (default 86400).")
    Long timeoutSeconds;

    @Option(names = "--submission-id", paramLabel = "ID",
        description = "The job's submission id (default: Ray's; for 'run': <run id>-<6 hex>).")
    String submissionId;

    @Option(names = "--metadata", paramLabel = "KEY=VALUE", description = "Job metadata (repeatable).")
    Map<String, String> metadata = new LinkedHashMap<>();

    @Option(names = "--env", paramLabel = "NAME=VALUE",
        description = "An environment variable of the job (runtime_env.env_vars; repeatable).")
    Map<String, String> env = new LinkedHashMap<>();

    @Option(names = "--entrypoint-num-cpus", paramLabel = "N", description = "CPUs reserved for the entrypoint.")
    Double cpus;

    @Option(names = "--entrypoint-num-gpus", paramLabel = "N", description = "GPUs reserved for the entrypoint.")
    Double gpus;

    boolean isWait() {
      return Boolean.TRUE.equals(wait);
    }

    Duration timeout() {
      long s = timeoutSeconds == null ? 86_400 : timeoutSeconds;
      if (s < 1) {
        throw new IllegalArgumentException("--timeout: must be at least 1 second, got " + s);
      }
      return Duration.ofSeconds(s);
    }

    JobsClient client() {
      return JobsClient.builder().baseUrl(address == null ? JobsClient.DEFAULT_URL.toString() : address).build();
    }

    /** These options, with those not given here taken from {@code outer}. */
    Options orElse(Options outer) {
      Options m = new Options();
      m.address = address != null ? address : outer.address;
      m.wait = wait != null ? wait : outer.wait;
      m.timeoutSeconds = timeoutSeconds != null ? timeoutSeconds : outer.timeoutSeconds;
      m.submissionId = submissionId != null ? submissionId : outer.submissionId;
      m.metadata.putAll(outer.metadata);
      m.metadata.putAll(metadata);
      m.env.putAll(outer.env);
      m.env.putAll(env);
      m.cpus = cpus != null ? cpus : outer.cpus;
      m.gpus = gpus != null ? gpus : outer.gpus;
      return m;
    }
  }

  /** {@code ravel submit run <config.yaml> [overrides...]}: a GRPO run as a Ray job. */
  @Command(name = "run", mixinStandardHelpOptions = true,
      description = {"Submit a GRPO run as a Ray job.",
          "The job runs this checkout's 'bin/ravel run <config> <overrides>' on the",
          "head node; its driver joins the cluster through the RAY_ADDRESS that Ray",
          "sets for jobs. The head must see this checkout, the config and the runs",
          "folder at the same paths (a local head or a shared file system). The",
          "submitter's rl.job.submit span is the parent of the job's rl.job.run",
          "(one trace); the spans of both land in the run's folder."},
      exitCodeListHeading = "%nExit codes with --wait:%n",
      exitCodeList = {"0:the run succeeded", "1:the run failed (or ravel could not submit it)",
          "2:the job was stopped", "3:the job was still running when --timeout passed"})
  static final class Run implements Callable<Integer> {
    @CommandLine.ParentCommand
    SubmitCommand parent;

    @Mixin
    Options options = new Options();

    @Mixin
    RunArgs args = new RunArgs();

    @Override
    public Integer call() {
      Options o = options.orElse(parent.options);
      RunSubmission.Builder b = RunSubmission.builder(args.configFile).overrides(args.overrides).env(System.getenv());
      if (o.submissionId != null) {
        b.submissionId(o.submissionId);
      }
      o.metadata.forEach(b::metadata);
      o.env.forEach(b::envVar);
      if (o.cpus != null) {
        b.entrypointNumCpus(o.cpus);
      }
      if (o.gpus != null) {
        b.entrypointNumGpus(o.gpus);
      }
      RunSubmission submission = b.build();
      JobsClient client = o.client();
      RunSubmission.Result r = submission.submit(client);
      System.err.println("ravel: submitted run " + r.runId() + " as job " + r.submissionId() + " to " + client.baseUrl()
          + (r.traceId().isEmpty() ? "" : " (trace " + r.traceId() + ")"));
      if (submission.config().telemetry().exporter().writesFiles()) {
        System.err.println("ravel: traces: " + r.runDir());
      }
      return finish(client, r.submissionId(), o, System.out);
    }
  }
}
