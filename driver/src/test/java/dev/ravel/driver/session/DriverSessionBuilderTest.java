package dev.ravel.driver.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ravel.telemetry.config.TelemetryConfig;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A session's settings are checked when given, before any Ray is started, each refusal naming the option. */
final class DriverSessionBuilderTest {
  @TempDir
  Path runs;

  private DriverSession.Builder builder() {
    return DriverSession.builder(TelemetryConfig.builder().runId("builder-test").runsDir(runs).build());
  }

  @Test
  void builder_badValues_refusedNamingTheOption() {
    assertThatThrownBy(() -> DriverSession.builder(null)).hasMessage("config");
    assertThatThrownBy(() -> builder().numCpus(0)).hasMessage("numCpus: must be >= 1, got 0");
    assertThatThrownBy(() -> builder().address(" ")).hasMessageStartingWith("address: must not be blank");
    assertThatThrownBy(() -> builder().headEnv("", "x")).hasMessage("headEnv: not a variable name: ''");
    assertThatThrownBy(() -> builder().headEnv("X", null)).hasMessage("headEnv X: the value is null");
    assertThatThrownBy(() -> builder().codeSearchPath(java.util.Arrays.asList((Path) null)))
        .hasMessage("codeSearchPath entry");
  }

  @Test
  void workerJavaOpts_unsetOrBlank_addsNothing() {
    assertThat(DriverSession.workerJavaOpts(java.util.Map.of())).isEmpty();
    assertThat(DriverSession.workerJavaOpts(java.util.Map.of(DriverSession.WORKER_JAVA_OPTS_ENV, "  "))).isEmpty();
  }

  @Test
  void workerJavaOpts_set_areItsWordsInOrder() {
    assertThat(DriverSession.workerJavaOpts(java.util.Map.of(DriverSession.WORKER_JAVA_OPTS_ENV,
        " -XX:TieredStopAtLevel=1 \t-Dx=y ")))
        .containsExactly("-XX:TieredStopAtLevel=1", "-Dx=y");
  }

  @Test
  void workerJavaOpts_aWordThatIsNotAnOption_refusedNamingTheVariableAndTheWord() {
    assertThatThrownBy(() -> DriverSession.workerJavaOpts(java.util.Map.of(DriverSession.WORKER_JAVA_OPTS_ENV,
        "-Xss1m Xmx2g")))
        .isInstanceOf(dev.ravel.telemetry.config.ConfigException.class)
        .hasMessageStartingWith("RAVEL_WORKER_JAVA_OPTS: 'Xmx2g' is not a JVM option");
  }

  @Test
  void start_codeSearchPathEntryMissing_refusedNamingItBeforeRayStarts() throws Exception {
    // a checkout with the workers built (as RayHome finds them), so the check needs no real build
    Path home = runs.resolve("ravel");
    java.nio.file.Files.createDirectories(home.resolve("workers/target/worker-lib"));
    java.nio.file.Files.writeString(home.resolve("workers/target/workers-0.1.0-SNAPSHOT.jar"), "jar");
    Path missing = runs.resolve("no-such.jar");
    assertThatThrownBy(() -> builder().codeSearchPath(List.of(missing)).classpathOnWorkers(false)
        .env(java.util.Map.of("RAVEL_HOME", home.toString())).start())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("code search path: " + missing + " does not exist");
  }
}
