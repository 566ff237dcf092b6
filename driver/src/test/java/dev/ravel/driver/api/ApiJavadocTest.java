package dev.ravel.driver.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * The javadoc of the public API ({@code docs/public-api.txt}), built with every doclint check on: a public type or
 * member of the API without its documentation (a comment, each parameter, the return value, what it throws) fails
 * here. The HTML lands in {@code driver/target/api-javadoc}.
 */
final class ApiJavadocTest {
  private static final Path ROOT = Path.of("").toAbsolutePath().getParent();

  /** The Java types of {@code docs/public-api.txt}: module and type of each line. */
  static List<String[]> apiTypes() throws IOException {
    List<String[]> out = new ArrayList<>();
    for (String line : Files.readAllLines(ROOT.resolve("docs/public-api.txt"))) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      String[] parts = line.split(" ", 3);
      assertThat(parts).as("docs/public-api.txt line '%s': module type | what", line).hasSize(3);
      assertThat(parts[2]).as("docs/public-api.txt line '%s'", line).startsWith("| ");
      if (!parts[0].equals("python")) {
        out.add(new String[] {parts[0], parts[1]});
      }
    }
    return out;
  }

  @Test
  void apiJavadoc_buildsWithEveryDoclintCheckAndNoWarning() throws IOException {
    List<String> files = new ArrayList<>();
    for (String[] t : apiTypes()) {
      Path src = ROOT.resolve(t[0]).resolve("src/main/java").resolve(t[1].replace('.', '/') + ".java");
      assertThat(src).as("the source of %s", t[1]).isRegularFile();
      files.add(src.toString());
    }
    Path out = ROOT.resolve("driver/target/api-javadoc");
    Files.createDirectories(out);
    List<String> args = new ArrayList<>(List.of("-quiet", "-Xdoclint:all", "-Xmaxwarns", "10000", "-d", out.toString(),
        "-cp", System.getProperty("java.class.path")));
    args.addAll(files);
    java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream();
    int rc = ToolProvider.getSystemDocumentationTool().run(null, log, log, args.toArray(String[]::new));
    String report = log.toString(java.nio.charset.StandardCharsets.UTF_8);
    assertThat(report).as("javadoc of docs/public-api.txt's types").doesNotContain("warning:").doesNotContain("error:");
    assertThat(rc).isZero();
  }
}
