package dev.ravel.driver.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BenchSuiteTest {
  private static final Path ROOT = Path.of("").toAbsolutePath().getParent();

  private static Map<String, Object> ratio(double value, double lo, double hi, int n) {
    return Map.of("value", value, "ci95", List.of(lo, hi), "per_round", java.util.Collections.nCopies(n, value));
  }

  @Test
  void targets_readEachRatioAndJudgeItsBoundInItsDirection() {
    Map<String, Object> parts = new LinkedHashMap<>();
    parts.put("java", Map.of("ratios", Map.of("hop", ratio(1.25, 1.1, 1.4, 20), "engine_share", ratio(0.93, 0.9, 0.95, 20))));
    parts.put("refit", Map.of("error", "boom"));

    List<Map<String, Object>> t = BenchSuite.targets(parts);

    assertThat(t).hasSize(BenchSuite.TARGETS.size());
    Map<String, Map<String, Object>> byId = new LinkedHashMap<>();
    t.forEach(x -> byId.put((String) x.get("id"), x));
    assertThat(byId.get("hop.java")).containsEntry("value", 1.25).containsEntry("met", false).containsEntry("n", 20);
    assertThat(byId.get("engine.java")).containsEntry("value", 0.93).containsEntry("met", true)
        .containsEntry("interval_spans_target", false);
    assertThat(byId.get("hop.java")).containsEntry("interval_spans_target", true);
    assertThat(byId.get("refit")).containsEntry("why", "part failed").containsEntry("value", null);
    assertThat(byId.get("calls")).containsEntry("why", "part not run");
    assertThat(byId.get("hop.python")).containsEntry("why", "part not run");
  }

  @Test
  void targets_idsAreUniqueAndEveryPartIsKnown() {
    assertThat(BenchSuite.TARGETS.stream().map(BenchSuite.Target::id)).doesNotHaveDuplicates();
    assertThat(BenchSuite.TARGETS).allSatisfy(t -> assertThat(BenchSuite.PARTS).contains(t.part()));
    assertThat(BenchSuite.PART_NAMES).isEqualTo(String.join(", ", BenchSuite.PARTS));
  }

  @Test
  void table_hasOneRowPerTargetWithValueIntervalAndVerdict() {
    Map<String, Object> report = new LinkedHashMap<>();
    report.put("when", "2026-12-05T12:00:00Z");
    report.put("commit", "abc1234");
    report.put("rounds", 3);
    report.put("seconds", 600.0);
    report.put("machine", Map.of("cores", 2, "java", "17", "ray", "2.60.0"));
    report.put("targets", BenchSuite.targets(Map.of("calls", Map.of("ratios",
        Map.of("ravel_over_plain", ratio(1.05, 1.01, 1.09, 6))))));

    String table = BenchSuite.table(report);

    assertThat(table).contains("| `RavelActorHandle` call / plain Ray actor call | <= 1.10 | 1.050 | 1.010-1.090 (6) | met |")
        .contains("commit abc1234").contains("| Python refit / plain `ray.put` + `ray.get` + `load_state_dict`, GB/s"
            + " | >= 0.80 | - | - | not measured: part not run |");
    assertThat(table.lines().filter(l -> l.startsWith("| ") && !l.startsWith("| measure"))).hasSize(
        BenchSuite.TARGETS.size());
  }

  @Test
  void withTable_replacesOnlyTheGeneratedBlock() {
    String text = "# B\n\nbefore\n" + BenchSuite.BEGIN + "\nold table\n" + BenchSuite.END + "\nafter\n";

    String out = BenchSuite.withTable(text, "new table\n", "b.md");

    assertThat(out).isEqualTo("# B\n\nbefore\n" + BenchSuite.BEGIN + "\nnew table\n" + BenchSuite.END + "\nafter\n");
    assertThat(BenchSuite.tableOf(out)).contains("new table\n");
    assertThatThrownBy(() -> BenchSuite.withTable("no block", "t", "b.md")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("b.md has no generated table block");
  }

  @Test
  void docsTable_isTheRenderingOfTheCommittedSuiteJson() throws Exception {
    Path docs = ROOT.resolve("docs/benchmarks.md");
    Path json = ROOT.resolve("docs/bench-suite.json");

    String table = BenchSuite.table(BenchSuite.read(json));

    assertThat(BenchSuite.tableOf(Files.readString(docs))).as("docs/benchmarks.md's generated block; regenerate with"
        + " bin/ravel bench --table-from docs/bench-suite.json --docs docs/benchmarks.md").contains(table);
  }
}
