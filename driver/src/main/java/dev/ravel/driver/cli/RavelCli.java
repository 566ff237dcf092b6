package dev.ravel.driver.cli;

import dev.ravel.workers.serve.ServeCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code ravel}: run and observe RL post-training on Ray. */
@Command(name = "ravel", mixinStandardHelpOptions = true, versionProvider = RavelCli.Version.class,
    description = "Run and observe reinforcement-learning post-training on Ray.",
    subcommands = {RunCommand.class, RunsCommand.class, TraceCommand.class, ReportCommand.class, ServeCommand.class, BenchCommand.class,
        BenchHttpCommand.class, BenchCallsCommand.class, DemoCommand.class, SubmitCommand.class, JobsCommand.class, CommandLine.HelpCommand.class})
public final class RavelCli implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    DriverLog.install();
    System.exit(execute(args));
  }

  /** Runs the command line and returns its exit code (for tests and the launcher). */
  public static int execute(String... args) {
    CommandLine cl = new CommandLine(new RavelCli());
    Errors errors = new Errors();
    cl.setExecutionExceptionHandler(errors);
    cl.setParameterExceptionHandler(errors);
    return cl.execute(args);
  }

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** {@code --version}: Ravel's version from the build, its commit, and the Ray, OpenTelemetry and Java in use. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      java.util.Map<String, String> v = dev.ravel.driver.grpo.RunVersions.of(
          java.nio.file.Path.of(System.getProperty("ravel.home", ".")));
      return new String[] {"ravel " + v.get("ravel"), "commit " + v.get("git_commit"), "ray " + v.get("ray"),
          "opentelemetry " + v.get("opentelemetry"), "java " + v.get("java")};
    }
  }
}
