package dev.ravel.driver.cli;

import dev.ravel.driver.grpo.Checkpoints;
import dev.ravel.telemetry.config.ConfigException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ravel export <run-id> OUT [--step N]}: copies a checkpoint's Hugging Face folder out of the run, for
 * {@code AutoModelForCausalLM.from_pretrained(OUT)}.
 */
@Command(name = "export", mixinStandardHelpOptions = true,
    description = "Copy a run's trained policy out as a Hugging Face folder (save_pretrained: config.json, "
        + "safetensors, tokenizer), which AutoModelForCausalLM.from_pretrained loads. Runs of model.path write one "
        + "with every checkpoint.")
final class ExportCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "RUN_ID", description = "The run (see ravel runs).")
  String runId;

  @Parameters(index = "1", paramLabel = "OUT", description = "The folder to create (it must not exist, or be empty).")
  Path out;

  @Option(names = "--step", paramLabel = "N", description = "The checkpoint after N steps (default: the newest).")
  Integer step;

  @Option(names = "--runs-dir", description = "Folder of run folders (default: RAVEL_TELEMETRY_RUNS_DIR, else runs).")
  Path runsDir;

  @picocli.CommandLine.ParentCommand
  RavelCli cli;

  @Override
  public Integer call() throws IOException {
    runsDir = RunsFolder.resolve(runsDir, RunsFolder.env(cli));
    Path dir = runsDir.resolve(runId);
    if (!Files.isDirectory(dir)) {
      throw new ConfigException("RUN_ID", "no run '" + runId + "' under " + runsDir.toAbsolutePath()
          + " (ravel runs lists them)");
    }
    List<Integer> kept = Checkpoints.steps(dir);
    Checkpoints.Found found = (step == null ? Checkpoints.latest(dir) : Checkpoints.at(dir, step)).orElseThrow(() ->
        new ConfigException(step == null ? "RUN_ID" : "--step", "run " + runId + " has no complete checkpoint"
            + (step == null ? "" : " after step " + step) + " (kept: " + (kept.isEmpty() ? "none" : kept) + ")"));
    Path hf = found.huggingFaceFolder();
    if (!Files.isRegularFile(hf.resolve("config.json"))) {
      throw new ConfigException("RUN_ID", "run " + runId + "'s checkpoint after step " + found.meta().step()
          + " holds no Hugging Face folder: runs of model.path write one (" + hf + ")");
    }
    if (Files.exists(out)) {
      try (Stream<Path> s = Files.list(out)) {
        if (!Files.isDirectory(out) || s.findAny().isPresent()) {
          throw new ConfigException("OUT", out + " exists and is not an empty folder");
        }
      }
    }
    Files.createDirectories(out);
    try (Stream<Path> files = Files.walk(hf)) {
      for (Path f : files.toList()) {
        Path target = out.resolve(hf.relativize(f).toString());
        if (Files.isDirectory(f)) {
          Files.createDirectories(target);
        } else {
          Files.copy(f, target, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
    System.out.println("exported run " + runId + " after step " + found.meta().step() + " to " + out.toAbsolutePath()
        + " (AutoModelForCausalLM.from_pretrained loads it)");
    return 0;
  }
}
