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
    assertThat(byId.get("hop.java")).containsEntry("interval_spans_target", true).containsEntry("verdict", "not shown");
    assertThat(byId.get("engine.java")).containsEntry("verdict", "met");
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
        .contains("commit abc1234").contains(" | >= 0.25 | - | - | not measured: part not run |");
    assertThat(table.lines().filter(l -> l.startsWith("| ") && !l.startsWith("| measure"))).hasSize(
        BenchSuite.TARGETS.size());
  }

  @Test
  void table_givesNotShownWhereTheIntervalSpansTheBound() {
    Map<String, Object> report = new LinkedHashMap<>();
    report.put("targets", BenchSuite.targets(Map.of("calls", Map.of("ratios",
        Map.of("ravel_over_plain", ratio(1.05, 0.98, 1.12, 6))))));

    String table = BenchSuite.table(report);

    assertThat(table).contains("| `RavelActorHandle` call / plain Ray actor call | <= 1.10 | 1.050 | 0.980-1.120 (6)"
        + " | not shown (the 95% interval spans the target) |");
    assertThat(BenchSuite.verdict(true, false)).isEqualTo("met");
    assertThat(BenchSuite.verdict(false, false)).isEqualTo("not met");
    assertThat(BenchSuite.verdict(true, true)).isEqualTo("not shown");
    assertThat(BenchSuite.verdict(false, true)).isEqualTo("not shown");
  }

  @Test
  void refitRatios_pairRavelWithEverySideTheReportHas() {
    Map<String, List<Number>> gbps = new LinkedHashMap<>();
    gbps.put("ravel", List.of(1.0, 2.0));
    gbps.put("ray_numpy", List.of(2.0, 2.0));
    gbps.put("memcpy", List.of(10.0, 10.0));
    gbps.put("ray", List.of(0.5, 0.5));

    Map<String, Object> r = BenchSuite.refitRatios(gbps);

    assertThat(r).containsOnlyKeys("ravel_over_ray_numpy", "ravel_over_memcpy", "ravel_over_ray");
    assertThat(r.get("ravel_over_memcpy")).asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
        .containsEntry("per_round", List.of(0.1, 0.2));
    assertThat(BenchSuite.refitRatios(Map.of("ravel", List.of(1.0), "ray", List.of(1.0))))
        .containsOnlyKeys("ravel_over_ray");
  }

  @Test
  void merge_replacesTheLaterPartsAndNotesWhenAndWhereTheyRan() {
    Map<String, Object> base = new LinkedHashMap<>();
    base.put("when", "2026-12-05T12:00:00Z");
    base.put("commit", "abc1234");
    base.put("rounds", 4);
    base.put("seconds", 600.0);
    base.put("machine", Map.of("cores", 2, "java", "17", "ray", "2.60.0"));
    base.put("parts", Map.of("calls", Map.of("ratios", Map.of("ravel_over_plain", ratio(1.05, 1.01, 1.09, 6))),
        "refit", Map.of("ratios", Map.of("ravel_over_ray", ratio(3.0, 2.0, 4.0, 8)))));
    Map<String, Object> later = new LinkedHashMap<>();
    later.put("when", "2026-12-06T09:00:00Z");
    later.put("commit", "def5678");
    later.put("rounds", 4);
    later.put("seconds", 60.0);
    later.put("machine", Map.of("cores", 2, "java", "17", "ray", "2.60.0"));
    later.put("parts", Map.of("refit", Map.of("ratios", Map.of("ravel_over_ray_numpy", ratio(0.9, 0.85, 0.95, 8)))));

    Map<String, Object> merged = BenchSuite.merge(base, later);

    assertThat(merged).containsEntry("commit", "abc1234").containsEntry("when", "2026-12-05T12:00:00Z");
    assertThat(merged.get("merged")).asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.LIST).singleElement()
        .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP).containsEntry("parts", List.of("refit"))
        .containsEntry("commit", "def5678").containsEntry("when", "2026-12-06T09:00:00Z");
    Map<String, Map<String, Object>> byId = new LinkedHashMap<>();
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> targets = (List<Map<String, Object>>) merged.get("targets");
    targets.forEach(x -> byId.put((String) x.get("id"), x));
    assertThat(byId.get("refit.plain")).containsEntry("value", 0.9).containsEntry("verdict", "met");
    assertThat(byId.get("refit")).containsEntry("value", null);  // the earlier refit part is replaced whole
    assertThat(byId.get("calls")).containsEntry("value", 1.05);
    assertThat(BenchSuite.table(merged)).contains("commit abc1234").contains(
        "but the rows of part refit from a later `bin/ravel bench --suite --parts refit --into` (4 rounds;"
            + " 2026-12-06T09:00:00Z, commit def5678;");

    Map<String, Object> again = BenchSuite.merge(merged, later);

    assertThat(again.get("merged")).asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.LIST).hasSize(1);
    assertThatThrownBy(() -> BenchSuite.merge(Map.of(), later)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("\"parts\"");
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
  void targets_aRowWithoutABoundIsReportedNotJudged() {
    Map<String, Object> parts = Map.of("vllm", Map.of("ratios", Map.of("tracing_1_over_off", ratio(0.97, 0.9, 1.04, 5),
        "tracing_0_01_over_off", ratio(1.0, 0.995, 1.005, 5))));

    List<Map<String, Object>> t = BenchSuite.targets(parts);
    Map<String, Map<String, Object>> byId = new LinkedHashMap<>();
    t.forEach(x -> byId.put((String) x.get("id"), x));
    Map<String, Object> report = new LinkedHashMap<>();
    report.put("targets", t);
    String table = BenchSuite.table(report);

    assertThat(byId.get("tracing.vllm.all")).containsEntry("value", 0.97).containsEntry("verdict", "reported")
        .containsEntry("target", "(none)").doesNotContainKey("met");
    assertThat(byId.get("tracing.vllm")).containsEntry("verdict", "met");
    assertThat(table).contains("| (none) | 0.970 | 0.900-1.040 (5) | reported (no target) |")
        .contains("| >= 0.99 | 1.000 | 0.995-1.005 (5) | met |");
  }

  @Test
  void vllmVenv_optionThenPropertyThenEnvironmentAndAClearErrorWithoutAny(@org.junit.jupiter.api.io.TempDir Path tmp)
      throws Exception {
    Path venv = tmp.resolve("venv");
    Files.createDirectories(venv.resolve("bin"));
    for (String bin : List.of("vllm", "python")) {
      Files.writeString(venv.resolve("bin").resolve(bin), "#!/bin/sh\n");
      assertThat(venv.resolve("bin").resolve(bin).toFile().setExecutable(true)).isTrue();
    }
    java.util.Properties props = new java.util.Properties();
    Path other = tmp.resolve("other");

    assertThat(BenchSuite.vllmVenv(venv, props, Map.of(BenchSuite.VLLM_VENV_ENV, other.toString()))).isEqualTo(venv);
    assertThat(BenchSuite.vllmVenv(null, props, Map.of(BenchSuite.VLLM_VENV_ENV, venv.toString()))).isEqualTo(venv);
    props.setProperty(BenchSuite.VLLM_VENV_PROPERTY, venv.toString());
    assertThat(BenchSuite.vllmVenv(null, props, Map.of(BenchSuite.VLLM_VENV_ENV, other.toString()))).isEqualTo(venv);
    assertThatThrownBy(() -> BenchSuite.vllmVenv(null, new java.util.Properties(), Map.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--vllm-venv DIR")
        .hasMessageContaining("-Dravel.vllm.cpu.venv").hasMessageContaining("RAVEL_VLLM_CPU_VENV")
        .hasMessageContaining("scripts/setup-vllm-cpu.sh").hasMessageContaining("--parts java,");
    assertThatThrownBy(() -> BenchSuite.vllmVenv(other, new java.util.Properties(), Map.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--vllm-venv: " + other)
        .hasMessageContaining("bin/vllm");
  }

  private static dev.ravel.telemetry.traces.SpanRecord span(String id, String parent, String name, long startMs,
      long endMs, Map<String, Object> attributes) {
    return new dev.ravel.telemetry.traces.SpanRecord("t" + id.charAt(0), id, parent, name, 1, startMs * 1_000_000L,
        endMs * 1_000_000L, 0, "", attributes, Map.of(), List.of(), List.of(), "test");
  }

  @Test
  void engineHops_eachGenerateCallOverItsLlmRequestsExtentFromStep2On() {
    List<dev.ravel.telemetry.traces.SpanRecord> spans = List.of(
        // step 1: left out
        span("1root", "", "rl.grpo.step", 0, 1000, Map.of("rl.step", 1L)),
        span("1gen", "1root", "rl.vllm.generate", 0, 900, Map.of()),
        span("1wg", "1gen", "rl.worker.generate", 10, 890, Map.of()),
        span("1llm", "1wg", "llm_request", 20, 100, Map.of()),
        // step 2: a call of 110 ms whose engine spans (two requests, below the worker's call) cover 20-120
        span("2root", "", "rl.grpo.step", 1000, 2000, Map.of("rl.step", 2L)),
        span("2gen", "2root", "rl.vllm.generate", 1000, 1110, Map.of()),
        span("2wg", "2gen", "rl.worker.generate", 1005, 1105, Map.of()),
        span("2llma", "2wg", "llm_request", 1020, 1090, Map.of()),
        span("2llmb", "2wg", "llm_request", 1030, 1100, Map.of()),
        // a call with no engine span (sampled out): none
        span("2gen2", "2root", "rl.vllm.generate", 1200, 1300, Map.of()),
        // step 3: 100 ms over 50
        span("3root", "", "rl.grpo.step", 2000, 3000, Map.of("rl.step", 3L)),
        span("3gen", "3root", "rl.vllm.generate", 2000, 2100, Map.of()),
        span("3wg", "3gen", "rl.worker.generate", 2000, 2100, Map.of()),
        span("3llm", "3wg", "llm_request", 2025, 2075, Map.of()));

    assertThat(BenchSuite.engineHops(spans)).containsExactly(110.0 / 80, 2.0);
    assertThat(BenchSuite.engineHops(List.of())).isEmpty();
  }

  @Test
  void vllmRatios_pairEachSideRoundByRound() {
    Map<String, Object> report = Map.of(
        "client", Map.of("rounds", List.of(Map.of("ravel_tokens_per_s", 90.0, "openai_tokens_per_s", 100.0),
            Map.of("ravel_tokens_per_s", 110.0, "openai_tokens_per_s", 100.0))),
        "refit", Map.of("rounds", List.of(Map.of("ravel_gb_per_s", 1.0, "plain_gb_per_s", 2.0),
            Map.of("ravel_gb_per_s", 1.0, "plain_gb_per_s", 4.0))),
        "tracing", Map.of("rounds", List.of(
            Map.of("off_tokens_per_s", 100.0, "share_0.01_tokens_per_s", 99.0, "share_1.0_tokens_per_s", 80.0),
            Map.of("off_tokens_per_s", 50.0, "share_0.01_tokens_per_s", 50.0, "share_1.0_tokens_per_s", 45.0))));

    Map<String, Object> r = BenchSuite.vllmRatios(report);

    assertThat(r).containsOnlyKeys("client_ravel_over_openai", "refit_ravel_over_torch", "tracing_0_01_over_off",
        "tracing_1_over_off");
    assertThat(r.get("client_ravel_over_openai")).asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
        .containsEntry("per_round", List.of(0.9, 1.1));
    assertThat(r.get("refit_ravel_over_torch")).asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
        .containsEntry("per_round", List.of(0.5, 0.25));
    assertThat(r.get("tracing_0_01_over_off")).asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
        .containsEntry("per_round", List.of(0.99, 1.0));
    assertThat(r.get("tracing_1_over_off")).asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
        .containsEntry("per_round", List.of(0.8, 0.9));
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
