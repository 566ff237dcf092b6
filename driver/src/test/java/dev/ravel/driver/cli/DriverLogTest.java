package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.logging.Handler;
import java.util.logging.LogManager;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class DriverLogTest {
  @TempDir
  Path tmp;

  @Test
  void julToFile_theSdksRecordsGoToTheDriverLogAndNoHandlerIsLeftOnTheConsole() throws IOException {
    Logger root = LogManager.getLogManager().getLogger("");
    Handler[] before = root.getHandlers();
    Path log = tmp.resolve("driver.log");
    try {
      DriverLog.julToFile(log);
      Logger.getLogger("io.opentelemetry.exporter.internal.http.HttpExporter")
          .severe("Failed to export spans. The request could not be executed.");

      assertThat(Files.readString(log)).contains("SEVERE: Failed to export spans.");
      assertThat(root.getHandlers()).hasSize(1)
          .noneMatch(h -> h instanceof java.util.logging.ConsoleHandler);
    } finally {
      for (Handler h : root.getHandlers()) {
        root.removeHandler(h);
      }
      for (Handler h : before) {
        root.addHandler(h);
      }
    }
  }
}
