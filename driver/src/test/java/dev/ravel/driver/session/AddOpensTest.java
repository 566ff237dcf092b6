package dev.ravel.driver.session;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/** The one definition of the JDK 17 {@code --add-opens} list, as the driver, the workers and the test JVMs get it. */
final class AddOpensTest {
  @Test
  void addOpens_readFromItsResourceOneOptionALine() {
    assertThat(DriverSession.ADD_OPENS).hasSize(6).allSatisfy(o -> assertThat(o).matches("--add-opens=java\\.base/"
        + "[a-z.]+=ALL-UNNAMED")).contains("--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED");
  }

  @Test
  void addOpens_thisTestJvmGotTheSameListFromTheArgumentFile() {
    // the build passes the file to the test JVM as @file; the JVM expands it into these options
    assertThat(ManagementFactory.getRuntimeMXBean().getInputArguments()).containsAll(DriverSession.ADD_OPENS);
  }
}
