package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ErrorsTest {
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private PrintStream savedErr;
  private PrintStream savedOut;

  @BeforeEach
  void capture() {
    savedErr = System.err;
    savedOut = System.out;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restore() {
    System.setErr(savedErr);
    System.setOut(savedOut);
  }

  private String errText() {
    return err.toString(StandardCharsets.UTF_8);
  }

  @Test
  void handleParseException_unknownOptionIsOneLineWithAHintToHelp() {
    int code = RavelCli.execute("run", "examples/grpo-sync.yaml", "--bogus");

    assertThat(code).isEqualTo(ExitCodes.USAGE);
    assertThat(errText().strip()).doesNotContain("\n").contains("--bogus").endsWith("(see 'ravel run --help')");
    assertThat(out.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void handleParseException_missingConfigIsAUsageError() {
    assertThat(RavelCli.execute("run")).isEqualTo(ExitCodes.USAGE);
    assertThat(errText().strip()).doesNotContain("\n").contains("CONFIG");
  }

  @org.junit.jupiter.api.io.TempDir
  java.nio.file.Path tmp;

  @Test
  void handleExecutionException_badValueNamesTheKeyBeforeAnythingStarts() throws Exception {
    java.nio.file.Path config = java.nio.file.Files.writeString(tmp.resolve("run.yaml"), "grpo:\n  steps: 1\n");
    int code = RavelCli.execute("run", config.toString(), "grpo.temperature=0");

    assertThat(code).isEqualTo(ExitCodes.USAGE);
    assertThat(errText().strip()).doesNotContain("\n").startsWith("ravel: invalid configuration: grpo.temperature:");
  }

  @Test
  void oneLine_keepsTheFirstLineTrimmed() {
    assertThat(Errors.oneLine("  a b\n  at x.y(Z.java:1)\n")).isEqualTo("a b");
    assertThat(Errors.oneLine(null)).isEmpty();
  }
}
