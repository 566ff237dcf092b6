package dev.ravel.driver.cli;

import dev.ravel.driver.jobs.JobInfo;
import dev.ravel.driver.jobs.JobsClient;
import dev.ravel.driver.jobs.RunSubmission;
import java.time.Duration;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code ravel jobs list|status|logs|stop|delete}: the Ray jobs of a cluster, through the dashboard's Jobs API. */
@Command(name = "jobs", mixinStandardHelpOptions = true,
    description = "List, inspect, follow, stop and delete Ray jobs (through the dashboard's Jobs API).",
    subcommands = {JobsCommand.ListJobs.class, JobsCommand.Status.class, JobsCommand.Logs.class,
        JobsCommand.Stop.class, JobsCommand.Delete.class})
final class JobsCommand implements Runnable {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss")
      .withZone(ZoneId.systemDefault());

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** The dashboard to talk to. */
  static final class Dashboard {
    @Option(names = "--address", paramLabel = "URL", defaultValue = "http://127.0.0.1:8265",
        description = "Ray dashboard (Jobs API) URL (default ${DEFAULT-VALUE}).")
    String address;

    JobsClient client() {
      return JobsClient.builder().baseUrl(address).build();
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "List the cluster's jobs.")
  static final class ListJobs implements Callable<Integer> {
    @Mixin
    Dashboard dashboard = new Dashboard();

    @Override
    public Integer call() {
      List<JobInfo> jobs = dashboard.client().list();
      System.out.printf("%-36s %-10s %-19s %-28s %s%n", "ID", "STATUS", "START", "RUN", "ENTRYPOINT");
      for (JobInfo j : jobs) {
        String entry = j.entrypoint().length() > 80 ? j.entrypoint().substring(0, 77) + "..." : j.entrypoint();
        System.out.printf("%-36s %-10s %-19s %-28s %s%n", j.id(), j.status(),
            j.startTime().map(TIME::format).orElse("-"), j.metadata().getOrDefault(RunSubmission.RUN_ID_METADATA, "-"),
            entry);
      }
      return 0;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true, description = "Print a job's status and message.")
  static final class Status implements Callable<Integer> {
    @Mixin
    Dashboard dashboard = new Dashboard();

    @Parameters(index = "0", paramLabel = "ID", description = "Submission id (or a driver's job id).")
    String id;

    @Override
    public Integer call() {
      JobInfo j = dashboard.client().status(id);
      System.out.println(j.id() + " " + j.status());
      if (!j.message().isEmpty()) {
        System.out.println(j.message().strip());
      }
      return 0;
    }
  }

  @Command(name = "logs", mixinStandardHelpOptions = true,
      description = "Print a job's output; with --follow, until it ends (exit code as 'ravel submit --wait').")
  static final class Logs implements Callable<Integer> {
    @Mixin
    Dashboard dashboard = new Dashboard();

    @Parameters(index = "0", paramLabel = "ID", description = "Submission id.")
    String id;

    @Option(names = {"-f", "--follow"}, description = "Follow the output until the job ends.")
    boolean follow;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "86400",
        description = "With --follow: how long to follow (default ${DEFAULT-VALUE}).")
    long timeoutSeconds;

    @Override
    public Integer call() {
      JobsClient client = dashboard.client();
      if (follow) {
        return SubmitCommand.follow(client, id, Duration.ofSeconds(Math.max(1, timeoutSeconds)), System.out);
      }
      System.out.print(client.logs(id));
      System.out.flush();
      return 0;
    }
  }

  @Command(name = "stop", mixinStandardHelpOptions = true, description = "Stop a running job.")
  static final class Stop implements Callable<Integer> {
    @Mixin
    Dashboard dashboard = new Dashboard();

    @Parameters(index = "0", paramLabel = "ID", description = "Submission id.")
    String id;

    @Override
    public Integer call() {
      boolean stopped = dashboard.client().stop(id);
      System.out.println(stopped ? "stop requested for job " + id : "job " + id + " was not running");
      return 0;
    }
  }

  @Command(name = "delete", mixinStandardHelpOptions = true,
      description = "Delete a finished job's record and logs.")
  static final class Delete implements Callable<Integer> {
    @Mixin
    Dashboard dashboard = new Dashboard();

    @Parameters(index = "0", paramLabel = "ID", description = "Submission id.")
    String id;

    @Override
    public Integer call() {
      boolean deleted = dashboard.client().delete(id);
      System.out.println(deleted ? "deleted job " + id : "job " + id + " was not deleted");
      return 0;
    }
  }
}
