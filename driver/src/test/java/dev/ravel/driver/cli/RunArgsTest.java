package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.PositionalParamSpec;

final class RunArgsTest {
  private static List<String> positionals(CommandLine cl) {
    return cl.getCommandSpec().positionalParameters().stream()
        .map(p -> p.index() + " " + p.paramLabel() + " " + p.arity() + ": " + String.join(" ", p.description()))
        .toList();
  }

  @Test
  void parseArgs_run_fillsTheConfigAndOverrides() {
    CommandLine cl = new CommandLine(new RavelCli());
    cl.parseArgs("run", "examples/grpo-sync.yaml", "grpo.steps=2", "run.mode=async");

    RunArgs args = cl.getSubcommands().get("run").<RunCommand>getCommand().args;
    assertThat(args.configFile).isEqualTo(Path.of("examples/grpo-sync.yaml"));
    assertThat(args.overrides).containsExactly("grpo.steps=2", "run.mode=async");
  }

  @Test
  void parseArgs_submitRun_fillsTheConfigAndOverridesAmongTheOptions() {
    CommandLine cl = new CommandLine(new RavelCli());
    cl.parseArgs("submit", "run", "c.yaml", "grpo.steps=2", "--wait", "telemetry.run_id=r1");

    CommandLine run = cl.getSubcommands().get("submit").getSubcommands().get("run");
    SubmitCommand.Run cmd = run.getCommand();
    assertThat(cmd.args.configFile).isEqualTo(Path.of("c.yaml"));
    assertThat(cmd.args.overrides).containsExactly("grpo.steps=2", "telemetry.run_id=r1");
    assertThat(cmd.options.isWait()).isTrue();
  }

  @Test
  void positionals_runAndSubmitRun_areTheSameConfigThenOverrides() {
    CommandLine cl = new CommandLine(new RavelCli());
    List<String> run = positionals(cl.getSubcommands().get("run"));

    assertThat(run).containsExactly("0 CONFIG 1: Run config (YAML).",
        "1..* KEY=VALUE 0..1: Overrides, e.g. grpo.steps=5.");
    assertThat(positionals(cl.getSubcommands().get("submit").getSubcommands().get("run"))).isEqualTo(run);
    assertThat(cl.getSubcommands().get("run").getCommandSpec().positionalParameters())
        .extracting(PositionalParamSpec::required).containsExactly(true, false);
  }
}
