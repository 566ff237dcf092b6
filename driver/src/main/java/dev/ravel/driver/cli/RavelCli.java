package dev.ravel.driver.cli;

import dev.ravel.workers.serve.ServeCommand;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code ravel}: run and observe RL post-training on Ray. */
@Command(name = "ravel", mixinStandardHelpOptions = true, versionProvider = RavelCli.Version.class,
    description = "Run and observe reinforcement-learning post-training on Ray.",
    subcommands = {RunCommand.class, RunsCommand.class, TraceCommand.class, ReportCommand.class, DiffCommand.class, ExportCommand.class, ServeCommand.class, BenchCommand.class,
        BenchHttpCommand.class, BenchCallsCommand.class, DemoCommand.class, SubmitCommand.class, JobsCommand.class, CommandLine.HelpCommand.class})
public final class RavelCli implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  private final Map<String, String> env;

  RavelCli() {
    this(System.getenv());
  }

  private RavelCli(Map<String, String> env) {
    this.env = Map.copyOf(env);
  }

  /** The environment the commands read (RAY_ADDRESS, OTEL_*, RAVEL_TELEMETRY_*): this process's, or a test's. */
  Map<String, String> env() {
    return env;
  }

  public static void main(String[] args) {
    DriverLog.install();
    System.exit(execute(args));
  }

  /** Runs the command line and returns its exit code (for tests and the launcher). */
  public static int execute(String... args) {
    return execute(System.getenv(), args);
  }

  /** As {@link #execute(String...)}, with {@code env} in place of this process's environment. */
  static int execute(Map<String, String> env, String... args) {
    CommandLine cl = new CommandLine(new RavelCli(env));
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
