package dev.ravel.driver.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Parameters;

/**
 * The arguments that name a GRPO run, shared as a {@code @Mixin} by {@code ravel run} and {@code ravel submit run}:
 * the run config file, then any number of {@code section.key=value} overrides.
 */
final class RunArgs {
  @Parameters(index = "0", paramLabel = "CONFIG", description = "Run config (YAML).")
  Path configFile;

  @Parameters(index = "1..*", paramLabel = "KEY=VALUE", description = "Overrides, e.g. grpo.steps=5.")
  List<String> overrides = new ArrayList<>();
}
