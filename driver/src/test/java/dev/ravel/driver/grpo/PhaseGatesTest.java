package dev.ravel.driver.grpo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.spans.Phase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

final class PhaseGatesTest {
  @TempDir
  Path dir;

  @Test
  void fromEnvironment_unsetOrEmpty_isNone() {
    assertThat(PhaseGates.fromEnvironment(Map.of())).isSameAs(PhaseHook.NONE);
    assertThat(PhaseGates.fromEnvironment(Map.of(PhaseGates.ENV, ""))).isSameAs(PhaseHook.NONE);
  }

  @Test
  void fromEnvironment_aFolderThatIsNotThere_isOneLineNamingTheVariable() {
    Path missing = dir.resolve("nope");
    assertThatThrownBy(() -> PhaseGates.fromEnvironment(Map.of(PhaseGates.ENV, missing.toString())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("RAVEL_TESTING_PHASE_GATES=" + missing + ": not a folder (the phase gates of a test of faults)");
  }

  @Test
  void beforePhase_withoutAHoldFile_marksThePhaseEnteredAndGoesOn() throws Exception {
    PhaseHook gates = PhaseGates.fromEnvironment(Map.of(PhaseGates.ENV, dir.toString()));
    gates.beforePhase(3, Phase.REFIT);
    gates.beforePhase(3, Phase.REFIT); // a phase run twice in a step: marked once per entry
    Path entered = dir.resolve("step-3.refit.entered");
    assertThat(PhaseGates.entered(dir, 3, Phase.REFIT)).isEqualTo(entered);
    assertThat(Files.readAllLines(entered)).containsExactly(String.valueOf(ProcessHandle.current().pid()),
        String.valueOf(ProcessHandle.current().pid()));
    assertThat(PhaseGates.hold(dir, 3, Phase.TRAINING)).isEqualTo(dir.resolve("step-3.train.hold"));
  }

  @Test
  @Timeout(120) // a hang guard only
  void beforePhase_whileItsHoldFileExists_waitsUntilTheTestRemovesIt() throws Exception {
    PhaseHook gates = PhaseGates.fromEnvironment(Map.of(PhaseGates.ENV, dir.toString()));
    Path hold = Files.createFile(PhaseGates.hold(dir, 2, Phase.TRAINING));
    CompletableFuture<Void> step = CompletableFuture.runAsync(() -> gates.beforePhase(2, Phase.TRAINING));
    Path entered = PhaseGates.entered(dir, 2, Phase.TRAINING);
    while (!Files.exists(entered)) {
      Thread.sleep(10);
    }
    // entered and held: it stays held however long the test takes (a hold of another step or phase does not count)
    gates.beforePhase(1, Phase.TRAINING);
    gates.beforePhase(2, Phase.LOGPROBS);
    assertThat(step).isNotDone();
    Files.delete(hold);
    step.get(60, TimeUnit.SECONDS);
    assertThat(step).isCompleted();
  }
}
