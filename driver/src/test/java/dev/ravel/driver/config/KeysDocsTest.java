package dev.ravel.driver.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.config.TelemetryConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README documents exactly the keys there are: its run-config reference is {@link Keys#markdown()}, its
 * telemetry table lists {@link TelemetryConfig#KEYS} in order, and no key it or {@code docs/} names in
 * backticks is one the config would reject. After changing a key, {@code -Dravel.docs.write=true} rewrites
 * the reference block in place.
 */
final class KeysDocsTest {
  private static final String BEGIN = "<!-- run-config-keys: generated from Keys.java by KeysDocsTest -->";
  private static final String END = "<!-- /run-config-keys -->";
  private static final Path ROOT = Path.of("").toAbsolutePath().getParent();
  private static final Path README = ROOT.resolve("README.md");

  @Test
  void readme_holdsTheReferenceOfEveryKey() throws IOException {
    String readme = Files.readString(README);
    int begin = readme.indexOf(BEGIN);
    int end = readme.indexOf(END);
    assertThat(begin).as("README.md has the marker %s", BEGIN).isNotNegative();
    assertThat(end).as("README.md has the marker %s", END).isGreaterThan(begin);
    String expected = "\n" + Keys.markdown() + "\n";
    String actual = readme.substring(begin + BEGIN.length(), end);
    if (Boolean.getBoolean("ravel.docs.write") && !actual.equals(expected)) {
      Files.writeString(README, readme.substring(0, begin + BEGIN.length()) + expected + readme.substring(end));
      actual = expected;
    }
    assertThat(actual).as("README.md's key reference is stale: run this test with -Dravel.docs.write=true")
        .isEqualTo(expected);
  }

  @Test
  void everyKey_hasADocLineAndADefaultOfItsType() {
    assertThat(Keys.all()).isNotEmpty().allSatisfy(k -> {
      assertThat(k.doc()).as(k.dotted()).isNotBlank().doesNotContain("|").doesNotContain("\n");
      assertThat(k.read(k.defaultValue())).as(k.dotted()).isEqualTo(k.defaultValue());
    });
    assertThat(Keys.all().stream().map(Key::dotted)).doesNotHaveDuplicates();
  }

  @Test
  void readme_telemetryTableListsTheTelemetryKeysInOrder() throws IOException {
    List<String> lines = Files.readAllLines(README);
    int heading = lines.indexOf("## Telemetry configuration");
    assertThat(heading).as("README.md has a 'Telemetry configuration' section").isNotNegative();
    List<String> keys = new ArrayList<>();
    Pattern row = Pattern.compile("^\\| `([a-z_]+)` \\| [^|]+ \\| .+ \\|$");
    boolean inTable = false;
    for (String line : lines.subList(heading + 1, lines.size())) {
      if (line.startsWith("| key | default | meaning |")) {
        inTable = true;
        continue;
      }
      if (inTable && line.startsWith("|---")) {
        continue;
      }
      if (inTable && !line.startsWith("|")) {
        break;
      }
      if (inTable) {
        Matcher m = row.matcher(line);
        assertThat(m.matches()).as("a row of key, default and meaning: %s", line).isTrue();
        keys.add(m.group(1));
      }
    }
    assertThat(keys).isEqualTo(TelemetryConfig.KEYS);
  }

  @Test
  void docs_nameNoKeyThatDoesNotExist() throws IOException {
    Set<String> known = Keys.all().stream().map(Key::dotted).collect(Collectors.toSet());
    TelemetryConfig.KEYS.forEach(k -> known.add("telemetry." + k));
    // backticked section.key, alone or as `section.key: value` / `section.key=value` (file names are not keys)
    Pattern named = Pattern.compile("`((?:" + String.join("|", Keys.sections().keySet())
        + ")\\.[a-z_]+)(?:`|: |=)");
    Set<String> unknown = new TreeSet<>();
    List<Path> files = new ArrayList<>(List.of(README));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).forEach(files::add);
    }
    for (Path file : files) {
      Matcher m = named.matcher(Files.readString(file));
      while (m.find()) {
        if (!known.contains(m.group(1)) && !m.group(1).equals("run.json")) {
          unknown.add(ROOT.relativize(file) + ": " + m.group(1));
        }
      }
    }
    assertThat(unknown).as("keys the docs name that the config rejects").isEmpty();
  }

  @Test
  void grpoKeys_defaultToTheContractsGrpoDefaults() {
    com.fasterxml.jackson.databind.JsonNode shared = dev.ravel.telemetry.contract.Contract.section("grpo_defaults");
    int compared = 0;
    java.util.List<Key<?>> keys = new java.util.ArrayList<>(Keys.sections().get("grpo"));
    keys.addAll(Keys.sections().get("trainer"));
    for (Key<?> k : keys) {
      if (!shared.has(k.name()) || k.name().startsWith("clip_epsilon_")) {
        continue; // the two clip keys default to 0, "grpo.clip_epsilon": checked below
      }
      com.fasterxml.jackson.databind.JsonNode want = shared.get(k.name());
      if (k.defaultValue() instanceof Number n) {
        assertThat(n.doubleValue()).as(k.dotted()).isEqualTo(want.asDouble());
      } else {
        assertThat(String.valueOf(k.defaultValue())).as(k.dotted()).isEqualTo(want.asText());
      }
      compared++;
    }
    assertThat(Keys.CLIP_EPSILON.defaultValue()).isEqualTo(shared.get("clip_epsilon_low").asDouble())
        .isEqualTo(shared.get("clip_epsilon_high").asDouble());
    assertThat(compared).as("grpo and trainer keys the contract holds a default of").isGreaterThanOrEqualTo(17);
  }
}
