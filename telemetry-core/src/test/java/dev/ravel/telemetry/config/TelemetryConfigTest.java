package dev.ravel.telemetry.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

final class TelemetryConfigTest {
  private static final String RUN_ID_FORMAT = "\\d{8}-\\d{6}-[0-9a-f]{4}";

  @TempDir
  Path tmp;

  // ---------------------------------------------------------------- defaults

  @Test
  void fromMap_emptySectionGivesTheDocumentedDefaults() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of(), Map.of());

    assertThat(c.enabled()).isTrue();
    assertThat(c.preset()).isEqualTo(Preset.PER_STEP);
    assertThat(c.exporter()).isEqualTo(ExporterKind.FILE);
    assertThat(c.engineTracing()).isFalse();
    assertThat(c.engineSampleRatio()).isEqualTo(1.0);
    assertThat(c.engineSlowRequest()).isEqualTo(Duration.ofSeconds(2));
    assertThat(c.serviceName()).isEqualTo("ravel");
    assertThat(c.runsDir()).isEqualTo(Path.of("runs").toAbsolutePath().normalize());
    assertThat(c.runDir()).isEqualTo(c.runsDir().resolve(c.runId()));
    assertThat(c.envPassthrough()).isEmpty();
    assertThat(c.shutdownTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(c.runId()).matches(RUN_ID_FORMAT);
    assertThat(c.groups()).isEqualTo(EnumSet.complementOf(EnumSet.of(SpanGroup.ENGINE)));
  }

  // ---------------------------------------------------------------- OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES

  @Test
  void fromMap_otelSdkDisabledTrueTurnsTelemetryOffWhateverTheConfigSays() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("enabled", true), Map.of("OTEL_SDK_DISABLED", "TRUE"));
    assertThat(c.enabled()).isFalse();
    assertThat(TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_SDK_DISABLED", "false")).enabled()).isTrue();
    assertThat(TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_SDK_DISABLED", "")).enabled()).isTrue();
    ConfigException e = catchThrowableOfType(ConfigException.class,
        () -> TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_SDK_DISABLED", "yes")));
    assertThat(e.key()).isEqualTo("OTEL_SDK_DISABLED");
  }

  @Test
  void fromMap_otelTracesExporterNoneExportsNothingAndOtlpKeepsTheConfigs() {
    assertThat(TelemetryConfig.fromMap(Map.of("exporter", "both"), Map.of("OTEL_TRACES_EXPORTER", "none")).exporter())
        .isEqualTo(ExporterKind.NONE);
    assertThat(TelemetryConfig.fromMap(Map.of("exporter", "both"), Map.of("OTEL_TRACES_EXPORTER", "otlp")).exporter())
        .isEqualTo(ExporterKind.BOTH);
    ConfigException e = catchThrowableOfType(ConfigException.class,
        () -> TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_TRACES_EXPORTER", "zipkin")));
    assertThat(e.key()).isEqualTo("OTEL_TRACES_EXPORTER");
    assertThat(e.getMessage()).contains("zipkin", "otlp, none");
  }

  @Test
  void fromMap_otelServiceNameNamesTheServiceWhenTheConfigDoesNot() {
    assertThat(TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_SERVICE_NAME", "grpo-prod")).serviceName())
        .isEqualTo("grpo-prod");
    assertThat(TelemetryConfig.fromMap(Map.of("service_name", "from-yaml"), Map.of("OTEL_SERVICE_NAME", "grpo-prod"))
        .serviceName()).isEqualTo("from-yaml");
    assertThat(TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_SERVICE_NAME", "grpo-prod",
        "RAVEL_TELEMETRY_SERVICE_NAME", "ravel-env")).serviceName()).isEqualTo("ravel-env");
  }

  @Test
  void fromMap_resourceAttributesComeFromOtelResourceAttributesDecoded() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_RESOURCE_ATTRIBUTES",
        "service.name=from-attrs, deployment.environment.name=staging,team=rl%20infra%2Cgpu,"));

    assertThat(c.serviceName()).isEqualTo("from-attrs");
    assertThat(c.resourceAttributes()).containsExactly(Map.entry("deployment.environment.name", "staging"),
        Map.entry("team", "rl infra,gpu"));
  }

  @Test
  void fromMap_otelServiceNameBeatsServiceNameInResourceAttributes() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_SERVICE_NAME", "svc",
        "OTEL_RESOURCE_ATTRIBUTES", "service.name=other,a=1"));

    assertThat(c.serviceName()).isEqualTo("svc");
    assertThat(c.resourceAttributes()).containsExactly(Map.entry("a", "1"));
  }

  @Test
  void fromMap_yamlResourceAttributesWinOverTheEnvironmentsPerKey() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("resource_attributes", Map.of("a", "yaml", "n", 3)),
        Map.of("OTEL_RESOURCE_ATTRIBUTES", "a=env,b=env"));

    assertThat(c.resourceAttributes()).containsEntry("a", "yaml").containsEntry("b", "env").containsEntry("n", "3");
  }

  @Test
  void toEnvironment_resourceAttributesTravelToWorkersAndReadBack() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_RESOURCE_ATTRIBUTES", "team=rl%20infra%2Cgpu,x=a=b"));

    TelemetryConfig back = TelemetryConfig.fromMap(Map.of(), c.toEnvironment());

    assertThat(back.resourceAttributes()).isEqualTo(c.resourceAttributes()).containsEntry("x", "a=b");
  }

  @Test
  void fromMap_malformedOrReservedResourceAttributesFailNamingTheVariable() {
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of(), Map.of("OTEL_RESOURCE_ATTRIBUTES", "a=1,novalue")),
        "OTEL_RESOURCE_ATTRIBUTES");
    ConfigException e = assertConfigError(() -> TelemetryConfig.fromMap(Map.of(),
        Map.of("OTEL_RESOURCE_ATTRIBUTES", "rl.run.id=x")), "OTEL_RESOURCE_ATTRIBUTES");
    assertThat(e.getMessage()).contains("rl.run.id").contains("reserved");
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of("resource_attributes", Map.of("rl.step", "1")), Map.of()),
        "telemetry.resource_attributes");
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of("resource_attributes", Map.of("a", List.of(1))), Map.of()),
        "telemetry.resource_attributes.a");
  }

  @Test
  void fromMap_nullSectionGivesDefaults() {
    TelemetryConfig c = TelemetryConfig.fromMap(null, Map.of());

    assertThat(c.preset()).isEqualTo(Preset.PER_STEP);
    assertThat(c.exporter()).isEqualTo(ExporterKind.FILE);
  }

  @Test
  void builder_defaultsMatchFromMapDefaults() {
    TelemetryConfig built = TelemetryConfig.builder().runId("r1").build();
    TelemetryConfig read = TelemetryConfig.fromMap(Map.of("run_id", "r1"), Map.of());

    assertThat(built).isEqualTo(read);
  }

  @Test
  void newRunId_matchesTimestampAndHexSuffix() {
    assertThat(TelemetryConfig.newRunId()).matches(RUN_ID_FORMAT);
  }

  @Test
  void build_generatesDistinctRunIdsWhenNoneIsGiven() {
    // 16 bits of randomness: two in a row collide with probability 1/65536 per second; retry a few
    boolean distinct = false;
    for (int i = 0; i < 5 && !distinct; i++) {
      distinct = !TelemetryConfig.builder().build().runId().equals(TelemetryConfig.builder().build().runId());
    }
    assertThat(distinct).isTrue();
  }

  // ---------------------------------------------------------------- YAML values

  @Test
  void fromMap_acceptsYamlTypedValues() {
    Path runs = tmp.resolve("runs");
    Map<String, Object> section = new LinkedHashMap<>();
    section.put("enabled", Boolean.TRUE);
    section.put("preset", "default");
    section.put("span_groups", List.of("reward", "IDLE"));
    section.put("engine_tracing", true);
    section.put("engine_sample_ratio", 0.25);
    section.put("engine_slow_request_ms", 5000);
    section.put("exporter", "both");
    section.put("run_id", "exp-1.a_b");
    section.put("service_name", "trainer");
    section.put("runs_dir", runs.toString());
    section.put("env_passthrough", List.of("HF_HOME", "CUDA_VISIBLE_DEVICES"));
    section.put("shutdown_timeout_ms", 1500);

    TelemetryConfig c = TelemetryConfig.fromMap(section, Map.of());

    assertThat(c.preset()).isEqualTo(Preset.DEFAULT);
    assertThat(c.groups()).containsExactlyInAnyOrder(SpanGroup.STEP, SpanGroup.GENERATION, SpanGroup.WORKER,
        SpanGroup.JOB, SpanGroup.REWARD, SpanGroup.IDLE, SpanGroup.ENGINE);
    assertThat(c.engineTracing()).isTrue();
    assertThat(c.engineSampleRatio()).isEqualTo(0.25);
    assertThat(c.engineSlowRequest()).isEqualTo(Duration.ofMillis(5000));
    assertThat(c.exporter()).isEqualTo(ExporterKind.BOTH);
    assertThat(c.runId()).isEqualTo("exp-1.a_b");
    assertThat(c.serviceName()).isEqualTo("trainer");
    assertThat(c.runsDir()).isEqualTo(runs.toAbsolutePath());
    assertThat(c.runDir()).isEqualTo(runs.toAbsolutePath().resolve("exp-1.a_b"));
    assertThat(c.envPassthrough()).containsExactly("HF_HOME", "CUDA_VISIBLE_DEVICES");
    assertThat(c.shutdownTimeout()).isEqualTo(Duration.ofMillis(1500));
  }

  @Test
  void fromMap_integerRatioIsAccepted() {
    assertThat(TelemetryConfig.fromMap(Map.of("engine_sample_ratio", 0), Map.of()).engineSampleRatio()).isZero();
  }

  @Test
  void fromMap_commaSeparatedStringListsAreAccepted() {
    TelemetryConfig c = TelemetryConfig.fromMap(
        Map.of("preset", "none", "span_groups", "step, data ,", "env_passthrough", "A,B"), Map.of());

    assertThat(c.groups()).containsExactlyInAnyOrder(SpanGroup.STEP, SpanGroup.DATA);
    assertThat(c.envPassthrough()).containsExactly("A", "B");
  }

  @Test
  void fromMap_nullValueCountsAsUnset() {
    Map<String, Object> section = new HashMap<>();
    section.put("preset", null);

    assertThat(TelemetryConfig.fromMap(section, Map.of()).preset()).isEqualTo(Preset.PER_STEP);
  }

  // ---------------------------------------------------------------- environment overrides

  @Test
  void fromMap_environmentOverridesTheSection() {
    Map<String, Object> section = Map.of(
        "preset", "default", "exporter", "otlp", "engine_sample_ratio", 0.5, "run_id", "from-yaml");
    Map<String, String> env = Map.of(
        "RAVEL_TELEMETRY_PRESET", "all",
        "RAVEL_TELEMETRY_EXPORTER", "none",
        "RAVEL_TELEMETRY_ENGINE_SAMPLE_RATIO", "0.1",
        "RAVEL_TELEMETRY_RUN_ID", "from-env");

    TelemetryConfig c = TelemetryConfig.fromMap(section, env);

    assertThat(c.preset()).isEqualTo(Preset.ALL);
    assertThat(c.exporter()).isEqualTo(ExporterKind.NONE);
    assertThat(c.engineSampleRatio()).isEqualTo(0.1);
    assertThat(c.runId()).isEqualTo("from-env");
  }

  @Test
  void fromMap_environmentBooleansAndListsAreParsed() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("enabled", true, "engine_tracing", false), Map.of(
        "RAVEL_TELEMETRY_ENABLED", "yes",
        "RAVEL_TELEMETRY_ENGINE_TRACING", "on",
        "RAVEL_TELEMETRY_SPAN_GROUPS", "engine,refit",
        "RAVEL_TELEMETRY_ENV_PASSTHROUGH", "HF_TOKEN_PATH"));

    assertThat(c.engineTracing()).isTrue();
    assertThat(c.groups()).contains(SpanGroup.ENGINE, SpanGroup.REFIT);
    assertThat(c.envPassthrough()).containsExactly("HF_TOKEN_PATH");
  }

  @Test
  void fromMap_emptyEnvironmentValueCountsAsUnset() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("preset", "default", "run_id", "kept"), Map.of(
        "RAVEL_TELEMETRY_PRESET", "",
        "RAVEL_TELEMETRY_RUN_ID", "",
        "RAVEL_TELEMETRY_EXPORTER", ""));

    assertThat(c.preset()).isEqualTo(Preset.DEFAULT);
    assertThat(c.runId()).isEqualTo("kept");
    assertThat(c.exporter()).isEqualTo(ExporterKind.FILE);
  }

  @Test
  void fromMap_unrelatedEnvironmentVariablesAreIgnored() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of(), Map.of("RAVEL_TELEMETRY_BOGUS", "x", "PRESET", "all"));

    assertThat(c.preset()).isEqualTo(Preset.PER_STEP);
  }

  // ---------------------------------------------------------------- errors

  @Test
  void fromMap_unknownKeyFailsNamingIt() {
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of("presets", "all"), Map.of()), "telemetry.presets");
  }

  @ParameterizedTest
  @CsvSource({
      "preset,              everything",
      "exporter,            jaeger",
      "span_groups,         steps",
      "engine_sample_ratio, 1.5",
      "engine_sample_ratio, -0.1",
      "engine_sample_ratio, half",
      "engine_sample_ratio, NaN",
      "run_id,              a/b",
      "run_id,              my run",
      "run_id,              ../up",
      "run_id,              -leading-dash",
      "env_passthrough,     NOT-A-NAME",
      "env_passthrough,     1ABC",
      "enabled,             maybe",
      "engine_tracing,      sometimes",
      "engine_slow_request_ms, 1.5",
      "engine_slow_request_ms, -1",
      "shutdown_timeout_ms, 0",
      "shutdown_timeout_ms, soon",
      "service_name,        ' '"
  })
  void fromMap_invalidSectionValueFailsNamingTheKey(String key, String value) {
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of(key, value), Map.of()), "telemetry." + key);
  }

  @ParameterizedTest
  @CsvSource({
      "PRESET,              everything",
      "EXPORTER,            jaeger",
      "SPAN_GROUPS,         steps",
      "ENGINE_SAMPLE_RATIO, 1.5",
      "ENGINE_SAMPLE_RATIO, -0.1",
      "ENGINE_SAMPLE_RATIO, half",
      "RUN_ID,              a/b",
      "RUN_ID,              my run",
      "ENV_PASSTHROUGH,     NOT-A-NAME",
      "ENABLED,             maybe",
      "SHUTDOWN_TIMEOUT_MS, 0"
  })
  void fromMap_invalidEnvironmentValueFailsNamingTheVariable(String suffix, String value) {
    String variable = "RAVEL_TELEMETRY_" + suffix;
    // the section holds a valid value; the environment's invalid one wins and is the one named
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of(), Map.of(variable, value)), variable);
  }

  @Test
  void fromMap_invalidEnvironmentValueIsNamedEvenWhenTheSectionSetsTheKey() {
    ConfigException e = assertConfigError(
        () -> TelemetryConfig.fromMap(Map.of("preset", "all"), Map.of("RAVEL_TELEMETRY_PRESET", "bogus")),
        "RAVEL_TELEMETRY_PRESET");

    assertThat(e.getMessage()).contains("bogus").contains("per_step");
  }

  @Test
  void fromMap_yamlTypeMismatchFailsNamingTheKey() {
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of("span_groups", 3), Map.of()), "telemetry.span_groups");
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of("engine_sample_ratio", List.of(1)), Map.of()),
        "telemetry.engine_sample_ratio");
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of("preset", List.of("all")), Map.of()),
        "telemetry.preset");
  }

  @Test
  void build_invalidValueWithoutOriginIsNamedAsTelemetryKey() {
    assertConfigError(() -> TelemetryConfig.builder().engineSampleRatio(2).build(), "telemetry.engine_sample_ratio");
    assertConfigError(() -> TelemetryConfig.builder().runId("a b").build(), "telemetry.run_id");
  }

  @Test
  void fromMap_runIdAtTheLengthLimitIsAcceptedAndOneMoreRejected() {
    String max = "r".repeat(128);

    assertThat(TelemetryConfig.fromMap(Map.of("run_id", max), Map.of()).runId()).isEqualTo(max);
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of("run_id", max + "r"), Map.of()), "telemetry.run_id");
  }

  @Test
  void fromMap_ratioBoundsAreInclusive() {
    assertThat(TelemetryConfig.fromMap(Map.of("engine_sample_ratio", 0.0), Map.of()).engineSampleRatio()).isZero();
    assertThat(TelemetryConfig.fromMap(Map.of("engine_sample_ratio", 1.0), Map.of()).engineSampleRatio())
        .isEqualTo(1.0);
  }

  // ---------------------------------------------------------------- presets and groups

  @Test
  void groups_presetNoneIsEmpty() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("preset", "none"), Map.of());

    assertThat(c.groups()).isEmpty();
    assertThat(c.engineTracing()).isFalse();
  }

  @Test
  void groups_presetAllIncludesEveryGroupAndTurnsOnEngineTracing() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("preset", "all"), Map.of());

    assertThat(c.groups()).containsExactlyInAnyOrder(SpanGroup.values());
    assertThat(c.engineTracing()).isTrue();
    assertThat(c.isOn(SpanGroup.ENGINE)).isTrue();
  }

  @Test
  void groups_presetPerStepHasEverythingButEngine() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("preset", "per_step"), Map.of());

    assertThat(c.groups()).doesNotContain(SpanGroup.ENGINE).hasSize(SpanGroup.values().length - 1);
    assertThat(c.isOn(SpanGroup.ENGINE)).isFalse();
    assertThat(c.engineTracing()).isFalse();
  }

  @Test
  void groups_presetDefaultIsStepGenerationWorkerJob() {
    assertThat(TelemetryConfig.fromMap(Map.of("preset", "default"), Map.of()).groups())
        .containsExactlyInAnyOrder(SpanGroup.STEP, SpanGroup.GENERATION, SpanGroup.WORKER, SpanGroup.JOB);
  }

  @Test
  void groups_presetAllWithEngineTracingOffExcludesEngine() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("preset", "all", "engine_tracing", false), Map.of());

    assertThat(c.engineTracing()).isFalse();
    assertThat(c.groups()).doesNotContain(SpanGroup.ENGINE).contains(SpanGroup.STEP);
  }

  @Test
  void groups_engineTracingOnAddsEngineToAnyPreset() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("preset", "per_step", "engine_tracing", true), Map.of());

    assertThat(c.engineTracing()).isTrue();
    assertThat(c.groups()).contains(SpanGroup.ENGINE);
  }

  @Test
  void groups_explicitEngineGroupTurnsOnEngineTracing() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("span_groups", List.of("engine")), Map.of());

    assertThat(c.engineTracing()).isTrue();
    assertThat(c.groups()).contains(SpanGroup.ENGINE);
  }

  @Test
  void groups_spanGroupsAddToThePreset() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("preset", "none", "span_groups", List.of("step")), Map.of());

    assertThat(c.groups()).containsExactly(SpanGroup.STEP);
  }

  @Test
  void groups_areUnmodifiable() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of(), Map.of());

    assertThat(c.groups()).isUnmodifiable();
    assertThat(c.envPassthrough()).isUnmodifiable();
  }

  @ParameterizedTest
  @EnumSource(Preset.class)
  void fromMap_disabledMeansNoGroupsNoExporterAndNoEngineTracing(Preset preset) {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of(
        "enabled", false, "preset", preset.configName(), "exporter", "both", "engine_tracing", true), Map.of());

    assertThat(c.enabled()).isFalse();
    assertThat(c.groups()).isEmpty();
    assertThat(c.exporter()).isEqualTo(ExporterKind.NONE);
    assertThat(c.engineTracing()).isFalse();
    for (SpanGroup g : SpanGroup.values()) {
      assertThat(c.isOn(g)).isFalse();
    }
  }

  @Test
  void fromMap_environmentCanDisableTelemetry() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("enabled", true), Map.of("RAVEL_TELEMETRY_ENABLED", "false"));

    assertThat(c.groups()).isEmpty();
    assertThat(c.exporter()).isEqualTo(ExporterKind.NONE);
  }

  // ---------------------------------------------------------------- environment round trip

  @Test
  void toEnvironment_defaultsRoundTripThroughFromMap() {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of(), Map.of());

    TelemetryConfig back = TelemetryConfig.fromMap(Map.of(), c.toEnvironment());

    assertThat(back).isEqualTo(c).hasSameHashCodeAs(c);
    assertThat(back.runId()).isEqualTo(c.runId());
    assertThat(back.groups()).isEqualTo(c.groups());
  }

  @Test
  void toEnvironment_fullySetConfigRoundTripsThroughFromMap() {
    TelemetryConfig c = TelemetryConfig.builder()
        .enabled(true)
        .preset(Preset.DEFAULT)
        .spanGroups(List.of(SpanGroup.REWARD, SpanGroup.IDLE))
        .engineTracing(true)
        .engineSampleRatio(0.125)
        .engineSlowRequest(Duration.ofMillis(750))
        .exporter(ExporterKind.OTLP)
        .runId("round-trip_1")
        .serviceName("svc")
        .runsDir(tmp.resolve("r"))
        .envPassthrough(List.of("HF_HOME", "NCCL_DEBUG"))
        .shutdownTimeout(Duration.ofMillis(2500))
        .build();

    TelemetryConfig back = TelemetryConfig.fromMap(Map.of(), c.toEnvironment());

    assertThat(back).isEqualTo(c);
    assertThat(back.groups()).isEqualTo(c.groups());
    assertThat(back.engineTracing()).isTrue();
    assertThat(back.engineSampleRatio()).isEqualTo(0.125);
    assertThat(back.engineSlowRequest()).isEqualTo(Duration.ofMillis(750));
    assertThat(back.exporter()).isEqualTo(ExporterKind.OTLP);
    assertThat(back.serviceName()).isEqualTo("svc");
    assertThat(back.runsDir()).isEqualTo(tmp.resolve("r").toAbsolutePath());
    assertThat(back.envPassthrough()).containsExactly("HF_HOME", "NCCL_DEBUG");
    assertThat(back.shutdownTimeout()).isEqualTo(Duration.ofMillis(2500));
  }

  @Test
  void toEnvironment_disabledConfigRoundTripsAndStaysDisabled() {
    TelemetryConfig c = TelemetryConfig.builder().enabled(false).preset(Preset.ALL).runId("off").build();

    TelemetryConfig back = TelemetryConfig.fromMap(Map.of(), c.toEnvironment());

    assertThat(back).isEqualTo(c);
    assertThat(back.enabled()).isFalse();
    assertThat(back.groups()).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(strings = {"none", "default", "per_step", "all"})
  void toEnvironment_eachPresetRoundTripsWithTheSameGroupsAndEngineTracing(String preset) {
    TelemetryConfig c = TelemetryConfig.fromMap(Map.of("preset", preset), Map.of());

    TelemetryConfig back = TelemetryConfig.fromMap(Map.of(), c.toEnvironment());

    assertThat(back).isEqualTo(c);
    assertThat(back.groups()).isEqualTo(c.groups());
    assertThat(back.engineTracing()).isEqualTo(c.engineTracing());
  }

  @Test
  void toEnvironment_usesOnlyPrefixedNamesForEveryKey() {
    Map<String, String> env = TelemetryConfig.fromMap(Map.of(), Map.of()).toEnvironment();

    assertThat(env.keySet()).hasSize(TelemetryConfig.KEYS.size())
        .allSatisfy(k -> assertThat(k).startsWith(TelemetryConfig.ENV_PREFIX));
    for (String key : TelemetryConfig.KEYS) {
      assertThat(env).containsKey("RAVEL_TELEMETRY_" + key.toUpperCase(java.util.Locale.ROOT));
    }
  }

  @Test
  void equals_differsWhenAValueDiffers() {
    TelemetryConfig a = TelemetryConfig.builder().runId("x").build();

    assertThat(a).isNotEqualTo(a.toBuilder().preset(Preset.ALL).build());
    assertThat(a).isNotEqualTo(a.toBuilder().runId("y").build());
    assertThat(a).isEqualTo(a.toBuilder().build());
  }

  @Test
  void trackers_defaultToNone() {
    assertThat(TelemetryConfig.fromMap(Map.of(), Map.of()).trackers()).isEmpty();
  }

  @Test
  void trackers_fromAYamlListOrACommaString_countEachOnce() {
    TelemetryConfig list = TelemetryConfig.fromMap(Map.of("trackers", List.of("tensorboard", "MLflow", "mlflow")),
        Map.of());
    TelemetryConfig text = TelemetryConfig.fromMap(Map.of(), Map.of("RAVEL_TELEMETRY_TRACKERS", "[mlflow, tensorboard]"));

    assertThat(list.trackers()).containsExactly(TrackerKind.MLFLOW, TrackerKind.TENSORBOARD);
    assertThat(text.trackers()).containsExactly(TrackerKind.MLFLOW, TrackerKind.TENSORBOARD);
    assertThat(TelemetryConfig.fromMap(Map.of(), list.toEnvironment())).isEqualTo(list);
  }

  @Test
  void trackers_unknownName_isAnErrorNamingTheKeyAndTheValue() {
    ConfigException e = assertConfigError(
        () -> TelemetryConfig.fromMap(Map.of("trackers", List.of("mlflow", "wandb")), Map.of()), "telemetry.trackers");

    assertThat(e.getMessage()).contains("'wandb'").contains("mlflow, tensorboard");
  }

  @Test
  void trackers_fromTheEnvironment_errorNamesTheVariable() {
    assertConfigError(() -> TelemetryConfig.fromMap(Map.of(), Map.of("RAVEL_TELEMETRY_TRACKERS", "neptune")),
        "RAVEL_TELEMETRY_TRACKERS");
  }

  // ---------------------------------------------------------------- helpers

  private static ConfigException assertConfigError(ThrowingCallable call, String key) {
    ConfigException e = catchThrowableOfType(ConfigException.class, call);
    assertThat(e).as("expected a ConfigException naming %s", key).isNotNull();
    assertThat(e.key()).isEqualTo(key);
    assertThat(e.getMessage()).startsWith(key + ": ");
    return e;
  }
}
