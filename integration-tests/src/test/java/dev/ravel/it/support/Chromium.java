package dev.ravel.it.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.logging.Level;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;

/** A real headless Chromium (Debian's, {@code scripts/setup-browser.sh}) driven through ChromeDriver; quit it. */
public final class Chromium {
  private Chromium() {}

  /** Starts one, its browser log kept (every level) so that a test can assert no page error. */
  public static ChromeDriver start() throws IOException {
    String chromium = System.getenv().getOrDefault("RAVEL_CHROMIUM", "/usr/bin/chromium");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium);
    options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1400,1000",
        "--user-data-dir=" + Files.createTempDirectory("ravel-chromium"));
    LoggingPreferences logs = new LoggingPreferences();
    logs.enable(LogType.BROWSER, Level.ALL);
    options.setCapability("goog:loggingPrefs", logs);
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(Path.of("/usr/bin/chromedriver").toFile()).usingAnyFreePort().build();
    ChromeDriver driver = new ChromeDriver(service, options);
    driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(30));
    return driver;
  }
}
