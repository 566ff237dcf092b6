package dev.ravel.driver.grpo;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class RunVersionsTest {
  @Test
  void of_namesEveryVersion() {
    Map<String, String> v = RunVersions.of(Path.of("..").toAbsolutePath().normalize());

    assertThat(v).containsOnlyKeys("ravel", "git_commit", "java", "ray", "opentelemetry");
    assertThat(v.get("java")).startsWith(System.getProperty("java.version"));
    assertThat(v.get("opentelemetry")).matches("\\d+\\.\\d+\\.\\d+.*");
  }

  @Test
  void gitCommit_ofThisCheckout_isTheHeadCommit() {
    // the module's parent is the checkout (a clean clone in CI)
    assertThat(RunVersions.gitCommit(Path.of("..").toAbsolutePath().normalize())).matches("[0-9a-f]{40}(-dirty| \\(changes unknown\\))?");
  }

  @Test
  void gitCommit_notACheckout_isUnknown(@TempDir Path dir) {
    assertThat(RunVersions.gitCommit(dir)).isEqualTo("unknown");
  }
}
