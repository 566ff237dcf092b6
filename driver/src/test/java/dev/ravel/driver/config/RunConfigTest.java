package dev.ravel.driver.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.ravel.telemetry.config.ConfigException;
import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.Preset;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

final class RunConfigTest {
  private static final Path SYNC_EXAMPLE = Path.of("..", "examples", "grpo-sync.yaml");
  private static final Path ASYNC_EXAMPLE = Path.of("..", "examples", "grpo-async.yaml");

  @TempDir
  Path tmp;

  // ---------------------------------------------------------------- defaults, file, overrides

  @Test
  void load_ignoreEosMustBeTrueOrFalse() {
    assertConfigError(() -> RunConfig.load(null, List.of("generation.ignore_eos=sometimes"), Map.of()),
        "generation.ignore_eos");
    assertThat(RunConfig.load(null, List.of("generation.ignore_eos=true"), Map.of()).get(Keys.IGNORE_EOS))
        .isTrue();
  }

  @Test
  void load_resourcesAreNameEqualsAmountEachAboveZeroAndNamedOnce() {
    RunConfig c = RunConfig.load(null, List.of("generation.resources=[ravel_node_1=0.5, accel=1]",
        "trainer.resources=ravel_node_0=0.01"), Map.of());
    assertThat(Keys.resources(Keys.GENERATION_RESOURCES, c.get(Keys.GENERATION_RESOURCES)))
        .containsExactly(Map.entry("ravel_node_1", 0.5), Map.entry("accel", 1.0));
    assertThat(Keys.resources(Keys.TRAINER_RESOURCES, c.get(Keys.TRAINER_RESOURCES)))
        .containsExactly(Map.entry("ravel_node_0", 0.01));
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("generation.resources=[ravel_node_1]"), Map.of()),
        "generation.resources").getMessage()).contains("'ravel_node_1'", "NAME=AMOUNT");
    assertConfigError(() -> RunConfig.load(null, List.of("trainer.resources=[a=0]"), Map.of()), "trainer.resources");
    assertConfigError(() -> RunConfig.load(null, List.of("trainer.resources=[a=lots]"), Map.of()), "trainer.resources");
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("trainer.resources=[GPU=1]"), Map.of()),
        "trainer.resources").getMessage()).contains("num_gpus");
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("generation.resources=[a=1, a=2]"), Map.of()),
        "generation.resources").getMessage()).contains("'a' is given twice");
  }

  @Test
  void load_placementIsOneOfTheNamedStrategies() {
    assertThat(RunConfig.load(null, List.of(), Map.of()).get(Keys.PLACEMENT)).isEqualTo("none");
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("generation.placement=scatter"), Map.of()),
        "generation.placement").getMessage()).contains("scatter", "strict_spread");
    assertConfigError(() -> RunConfig.load(null, List.of("generation.num_cpus=0"), Map.of()), "generation.num_cpus");
  }

  @Test
  void load_groupsPerCallMustFitTheStep() {
    assertThat(RunConfig.load(null, List.of(), Map.of()).get(Keys.GROUPS_PER_CALL)).isZero();
    assertConfigError(() -> RunConfig.load(null, List.of("grpo.groups_per_call=-1"), Map.of()), "grpo.groups_per_call");
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("grpo.prompts_per_step=4",
        "grpo.groups_per_call=5"), Map.of()), "grpo.groups_per_call");
    assertThat(e.getMessage()).contains("grpo.prompts_per_step (4)");
  }

  @Test
  void load_withoutFileGivesTheDefaults() {
    RunConfig c = RunConfig.load(null, List.of(), Map.of());

    assertThat(c.mode()).isEqualTo(RunConfig.Mode.SYNC);
    assertThat(c.get(Keys.SEED)).isEqualTo(7);
    assertThat(c.get(Keys.ADDRESS)).isEmpty();
    assertThat(c.get(Keys.WORKER_HEAP_MB)).isEqualTo(512);
    assertThat(c.get(Keys.WORKERS)).isEqualTo(2);
    assertThat(c.get(Keys.BACKEND)).isEqualTo("embedded");
    assertThat(c.get(Keys.STEPS)).isEqualTo(30);
    assertThat(c.get(Keys.GROUP_SIZE)).isEqualTo(8);
    assertThat(c.get(Keys.LEARNING_RATE)).isEqualTo(0.03);
    assertThat(c.get(Keys.MAX_TRAJECTORY_AGE_STEPS)).isEqualTo(1);
    assertThat(c.source()).isNull();
    assertThat(c.telemetry().preset()).isEqualTo(Preset.PER_STEP);
    assertThat(c.telemetry().exporter()).isEqualTo(ExporterKind.FILE);
  }

  @Test
  void load_fileValuesReplaceDefaultsAndKeysNotInTheFileKeepTheirDefault() throws IOException {
    Path file = yaml("""
        run:
          mode: async
        grpo:
          steps: 12
          temperature: 0.7
        telemetry:
          engine_sample_ratio: 0.5
        """);

    RunConfig c = RunConfig.load(file, List.of(), Map.of());

    assertThat(c.mode()).isEqualTo(RunConfig.Mode.ASYNC);
    assertThat(c.get(Keys.STEPS)).isEqualTo(12);
    assertThat(c.get(Keys.TEMPERATURE)).isEqualTo(0.7);
    assertThat(c.get(Keys.PROMPTS_PER_STEP)).isEqualTo(32);
    assertThat(c.telemetry().engineSampleRatio()).isEqualTo(0.5);
    assertThat(c.source()).isEqualTo(file);
  }

  @Test
  void load_emptyOrCommentedOutFileIsAnErrorAnEmptySectionGivesDefaults() throws IOException {
    for (String text : List.of("", "# grpo:\n#   steps: 5\n", "---\n")) {
      Path file = yaml(text);
      assertThat(assertConfigError(() -> RunConfig.load(file, List.of(), Map.of()), file.toString()).getMessage())
          .contains("the config file is empty");
    }
    assertThat(RunConfig.load(yaml("grpo:\n"), List.of(), Map.of()).get(Keys.STEPS)).isEqualTo(30);
    assertThat(RunConfig.load(null, List.of(), Map.of()).get(Keys.STEPS)).isEqualTo(30);
  }

  @Test
  void load_aQuotedNumberOrBooleanIsRefusedNamingTheKeyAndTheType() throws IOException {
    assertThat(assertConfigError(() -> RunConfig.load(yaml("grpo:\n  kl_beta: \"0.04\"\n"), List.of(), Map.of()),
        "grpo.kl_beta").getMessage()).isEqualTo("grpo.kl_beta: expected a number, got the text '0.04' (in YAML a quoted"
        + " value is text: write it without quotes)");
    assertConfigError(() -> RunConfig.load(yaml("grpo:\n  steps: '5'\n"), List.of(), Map.of()), "grpo.steps");
    assertConfigError(() -> RunConfig.load(yaml("generation:\n  refit: 'true'\n"), List.of(), Map.of()),
        "generation.refit");
    // the command line types its values as YAML scalars do: numbers are numbers there
    assertThat(RunConfig.load(null, List.of("grpo.kl_beta=0.04", "grpo.steps=5"), Map.of()).get(Keys.KL_BETA))
        .isEqualTo(0.04);
    assertConfigError(() -> RunConfig.load(null, List.of("grpo.steps=five"), Map.of()), "grpo.steps");
  }

  @Test
  void load_overridesWinOverTheFile() throws IOException {
    Path file = yaml("""
        grpo:
          steps: 12
        telemetry:
          engine_sample_ratio: 0.25
        """);

    RunConfig c = RunConfig.load(file, List.of("grpo.steps=5", "telemetry.engine_sample_ratio=1.0"), Map.of());

    assertThat(c.get(Keys.STEPS)).isEqualTo(5);
    assertThat(c.telemetry().engineSampleRatio()).isEqualTo(1.0);
  }

  @Test
  void load_laterOverrideOfTheSameKeyWins() {
    RunConfig c = RunConfig.load(null, List.of("grpo.steps=5", "grpo.steps=9"), Map.of());

    assertThat(c.get(Keys.STEPS)).isEqualTo(9);
  }

  @Test
  void load_overrideValuesAreTypedByTheirKey() {
    RunConfig c = RunConfig.load(null, List.of("grpo.steps=5", "grpo.temperature=0.5", "run.mode=async",
        "cluster.address=true", "generation.backend= embedded "), Map.of());

    Map<String, Object> flat = c.flatten();
    assertThat(flat.get("grpo.steps")).isInstanceOf(Integer.class).isEqualTo(5);
    assertThat(flat.get("grpo.temperature")).isInstanceOf(Double.class).isEqualTo(0.5);
    assertThat(flat.get("cluster.address")).isInstanceOf(String.class).isEqualTo("true");
    assertThat(flat.get("run.mode")).isEqualTo("async");
    assertThat(flat.get("generation.backend")).isEqualTo("embedded");
  }

  @Test
  void load_overrideValueMayContainEqualsSignsAndColons() {
    RunConfig c = RunConfig.load(null,
        List.of("cluster.address=http://10.0.0.5:8000/v1?key=abc"), Map.of());

    assertThat(c.get(Keys.ADDRESS)).isEqualTo("http://10.0.0.5:8000/v1?key=abc");
  }

  @Test
  void load_emptyOverrideValueClearsAString() throws IOException {
    Path file = yaml("""
        cluster:
          address: "10.0.0.1:6379"
        """);

    RunConfig c = RunConfig.load(file, List.of("cluster.address="), Map.of());

    assertThat(c.get(Keys.ADDRESS)).isEmpty();
  }

  @Test
  void load_environmentOverridesTheTelemetrySectionOfTheFile() throws IOException {
    Path file = yaml("""
        telemetry:
          engine_sample_ratio: 0.25
          run_id: from-file
        """);

    RunConfig c = RunConfig.load(file, List.of(), Map.of(
        "RAVEL_TELEMETRY_ENGINE_SAMPLE_RATIO", "0.75",
        "RAVEL_TELEMETRY_RUN_ID", "from-env",
        "RAVEL_TELEMETRY_EXPORTER", "none"));

    assertThat(c.telemetry().engineSampleRatio()).isEqualTo(0.75);
    assertThat(c.telemetry().runId()).isEqualTo("from-env");
    assertThat(c.telemetry().exporter()).isEqualTo(ExporterKind.NONE);
  }

  @Test
  void load_invalidTelemetryEnvironmentValueNamesTheVariable() {
    assertConfigError(() -> RunConfig.load(null, List.of(), Map.of("RAVEL_TELEMETRY_ENGINE_SAMPLE_RATIO", "2")),
        "RAVEL_TELEMETRY_ENGINE_SAMPLE_RATIO");
  }

  // ---------------------------------------------------------------- unknown sections and keys

  @Test
  void load_unknownKeyInFileIsNamed() throws IOException {
    assertConfigError(() -> RunConfig.load(yaml("grpo:\n  stepz: 5\n"), List.of(), Map.of()), "grpo.stepz");
  }

  @Test
  void load_unknownSectionInFileIsNamed() throws IOException {
    ConfigException e = assertConfigError(
        () -> RunConfig.load(yaml("nosuch:\n  key: 1\n"), List.of(), Map.of()), "nosuch.key");
    assertThat(e.getMessage()).contains("unknown section 'nosuch'").contains("grpo").contains("telemetry");
  }

  @Test
  void load_unknownTelemetryKeyInFileIsNamed() throws IOException {
    assertConfigError(() -> RunConfig.load(yaml("telemetry:\n  sample: 1\n"), List.of(), Map.of()),
        "telemetry.sample");
  }

  @Test
  void load_unknownKeyInOverrideIsNamed() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("grpo.stepz=5"), Map.of()),
        "grpo.stepz");
    assertThat(e.getMessage()).contains("steps");
  }

  @Test
  void load_unknownSectionInOverrideIsNamed() {
    assertConfigError(() -> RunConfig.load(null, List.of("nosuch.key=1"), Map.of()), "nosuch.key");
  }

  @Test
  void load_unknownTelemetryKeyInOverrideIsNamed() {
    assertConfigError(() -> RunConfig.load(null, List.of("telemetry.sample=1"), Map.of()), "telemetry.sample");
  }

  @Test
  void load_overrideWithoutEqualsSignIsAnError() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("grpo.steps"), Map.of()),
        "grpo.steps");
    assertThat(e.getMessage()).contains("section.key=value");
  }

  @Test
  void load_overrideWithoutKeyIsAnError() {
    assertConfigError(() -> RunConfig.load(null, List.of("=5"), Map.of()), "=5");
  }

  @Test
  void load_overrideKeyWithoutSectionIsAnError() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("steps=5"), Map.of()), "steps");
    assertThat(e.getMessage()).contains("section.key");
  }

  // ---------------------------------------------------------------- bad files

  @Test
  void load_missingFileNamesThePath() {
    Path missing = tmp.resolve("nope.yaml");

    ConfigException e = assertConfigError(() -> RunConfig.load(missing, List.of(), Map.of()), missing.toString());
    assertThat(e.getMessage()).contains("not found");
  }

  @Test
  void load_fileThatIsNotYamlNamesTheFile() throws IOException {
    Path file = yaml("grpo: [steps, 5\nrun: {mode: sync\n");

    ConfigException e = catchThrowableOfType(ConfigException.class, () -> RunConfig.load(file, List.of(), Map.of()));
    assertThat(e.key()).startsWith(file + ":");
    assertThat(e.getMessage()).contains("not valid YAML");
  }

  @ParameterizedTest
  @ValueSource(strings = {"- grpo\n- run\n", "just some text\n", "42\n"})
  void load_fileWhoseTopLevelIsNotAMappingNamesTheFile(String text) throws IOException {
    Path file = yaml(text);

    ConfigException e = assertConfigError(() -> RunConfig.load(file, List.of(), Map.of()), file.toString());
    assertThat(e.getMessage()).contains("mapping");
  }

  @Test
  void load_sectionThatIsNotAMappingNamesTheSection() throws IOException {
    ConfigException e = assertConfigError(() -> RunConfig.load(yaml("grpo: 5\n"), List.of(), Map.of()), "grpo");
    assertThat(e.getMessage()).contains("expected a section");
  }

  // ---------------------------------------------------------------- validation

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(delimiter = '|', value = {
      "grpo.group_size=1                | grpo.group_size",
      "grpo.steps=0                     | grpo.steps",
      "grpo.prompts_per_step=0          | grpo.prompts_per_step",
      "grpo.max_new_tokens=0            | grpo.max_new_tokens",
      "grpo.top_p=0                     | grpo.top_p",
      "grpo.top_p=1.5                   | grpo.top_p",
      "grpo.temperature=-0.1            | grpo.temperature",
      "grpo.temperature=11              | grpo.temperature",
      "grpo.learning_rate=0             | grpo.learning_rate",
      "grpo.clip_epsilon=0              | grpo.clip_epsilon",
      "grpo.kl_beta=-1                  | grpo.kl_beta",
      "grpo.max_trajectory_age_steps=-1 | grpo.max_trajectory_age_steps",
      "grpo.checkpoint_every=-1         | grpo.checkpoint_every",
      "generation.workers=0             | generation.workers",
      "generation.kv_token_budget=0     | generation.kv_token_budget",
      "generation.max_running_requests=0 | generation.max_running_requests",
      "generation.max_concurrency=0     | generation.max_concurrency",
      "generation.backend=sglang        | generation.backend",
      "generation.backend=vllm          | generation.backend",
      "generation.backend=openai        | generation.servers",
      "cluster.worker_heap_mb=63        | cluster.worker_heap_mb",
      "cluster.num_cpus=-1              | cluster.num_cpus",
      "run.mode=batch                   | run.mode",
      "grpo.steps=abc                   | grpo.steps",
      "grpo.steps=2.5                   | grpo.steps",
      "grpo.temperature=hot             | grpo.temperature",
      "telemetry.engine_sample_ratio=1.5 | telemetry.engine_sample_ratio",
      "telemetry.preset=everything      | telemetry.preset",
  })
  void load_invalidValueIsAnErrorNamingItsKey(String override, String key) {
    assertConfigError(() -> RunConfig.load(null, List.of(override), Map.of()), key);
  }

  @Test
  void load_invalidValueInFileIsAnErrorNamingItsKey() throws IOException {
    assertConfigError(() -> RunConfig.load(yaml("grpo:\n  group_size: 1\n"), List.of(), Map.of()),
        "grpo.group_size");
  }

  @Test
  void load_valuesThatWouldFailInsideAWorkerAreRejectedUpFront() {
    assertConfigError(() -> RunConfig.load(null, List.of("grpo.temperature=0"), Map.of()), "grpo.temperature");
    assertConfigError(() -> RunConfig.load(null, List.of("run.seed=-1"), Map.of()), "run.seed");
    assertConfigError(() -> RunConfig.load(null, List.of("run.seed=1.5"), Map.of()), "run.seed");
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("generation.kv_token_budget=7",
        "grpo.max_new_tokens=4"), Map.of()), "generation.kv_token_budget");
    assertThat(e.getMessage()).contains("grpo.max_new_tokens (4)", "needs 8");
  }

  @Test
  void load_yamlSyntaxErrorIsOneLineWithFileLineAndColumn() throws Exception {
    Path bad = yaml("grpo:\n  steps: [1, 2\n  x: 1\n");
    ConfigException e = catchThrowableOfType(ConfigException.class, () -> RunConfig.load(bad, List.of(), Map.of()));
    assertThat(e.key()).isEqualTo(bad + ":3:4");
    assertThat(e.getMessage()).doesNotContain("\n").contains("not valid YAML", "expected ',' or ']'");
    Path tab = yaml("grpo:\n\tsteps: 3\n");
    ConfigException t = catchThrowableOfType(ConfigException.class, () -> RunConfig.load(tab, List.of(), Map.of()));
    assertThat(t.key()).isEqualTo(tab + ":2:1");
    assertThat(t.getMessage()).doesNotContain("\n").containsIgnoringCase("tab");
  }

  @Test
  void load_boundaryValuesAreAccepted() {
    RunConfig c = RunConfig.load(null, List.of("grpo.group_size=2", "grpo.steps=1", "grpo.top_p=1",
        "grpo.temperature=0.001", "grpo.kl_beta=0", "grpo.max_trajectory_age_steps=0", "cluster.worker_heap_mb=64",
        "telemetry.engine_sample_ratio=0", "run.seed=0", "generation.kv_token_budget=8", "grpo.max_new_tokens=4"),
        Map.of());

    assertThat(c.get(Keys.GROUP_SIZE)).isEqualTo(2);
    assertThat(c.get(Keys.TOP_P)).isEqualTo(1.0);
    assertThat(c.get(Keys.TEMPERATURE)).isEqualTo(0.001);
    assertThat(c.get(Keys.WORKER_HEAP_MB)).isEqualTo(64);
    assertThat(c.get(Keys.BACKEND)).isEqualTo("embedded");
    assertThat(c.telemetry().engineSampleRatio()).isZero();
  }

  @Test
  void load_invalidValueMessageSaysWhatIsAllowed() {
    ConfigException backend = assertConfigError(
        () -> RunConfig.load(null, List.of("generation.backend=sglang"), Map.of()), "generation.backend");
    assertThat(backend.getMessage()).contains("sglang").contains("embedded").contains("openai");

    ConfigException mode = assertConfigError(() -> RunConfig.load(null, List.of("run.mode=batch"), Map.of()),
        "run.mode");
    assertThat(mode.getMessage()).contains("batch").contains("sync").contains("async");
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "generation.servers=127.0.0.1:8000        | generation.servers",
      "generation.servers=http://127.0.0.1:8000/v1 | generation.servers",
      "generation.launch=vllm                   | generation.launch",
      "generation.launch_command=vllm serve {model} | generation.launch_command",
  })
  void load_badOpenAiBackendValue_isAnErrorNamingItsKey(String override, String key) {
    assertConfigError(() -> RunConfig.load(null, List.of("generation.backend=openai", override), Map.of()), key);
  }

  @Test
  void load_openAiBackendBadLimits_namesTheKey() {
    assertConfigError(() -> RunConfig.load(null, List.of("generation.backend=openai", "generation.launch=ravel",
        "generation.max_in_flight=0"), Map.of()), "generation.max_in_flight");
    assertConfigError(() -> RunConfig.load(null, List.of("generation.backend=openai", "generation.launch=ravel",
        "generation.request_timeout_s=0"), Map.of()), "generation.request_timeout_s");
  }

  @Test
  void load_inflightUpdatesWhereTheyCannotHappen_namesTheKeyAndWhy() {
    ConfigException sync = assertConfigError(() -> RunConfig.load(null, List.of("run.mode=sync",
        "generation.inflight_updates=true"), Map.of()), "generation.inflight_updates");
    assertThat(sync.getMessage()).contains("async");
    ConfigException lora = assertConfigError(() -> RunConfig.load(null, List.of("run.mode=async",
        "generation.backend=openai", "generation.launch=ravel", "generation.weight_sync=lora",
        "generation.inflight_updates=true"), Map.of()).serverBackend(), "generation.inflight_updates");
    assertThat(lora.getMessage()).contains("weight_sync: native");
    assertConfigError(() -> RunConfig.load(null, List.of("generation.backend=openai", "generation.launch=ravel",
        "generation.weight_sync=nccl"), Map.of()), "generation.weight_sync");
  }

  @Test
  void serverBackend_defaults_nativeWeightSyncPausingToWait() {
    RunConfig c = RunConfig.load(null, List.of("generation.backend=openai", "generation.launch=ravel"), Map.of());

    assertThat(c.serverBackend().nativeSync()).isTrue();
    assertThat(c.serverBackend().pauseMode()).isEqualTo("wait");
    assertThat(RunConfig.load(null, List.of("run.mode=async", "generation.backend=openai", "generation.launch=ravel",
        "generation.inflight_updates=true"), Map.of()).serverBackend().pauseMode()).isEqualTo("keep");
  }

  @Test
  void serverBackend_serversAsYamlList_areTheSpecsServers() throws IOException {
    RunConfig c = RunConfig.load(yaml("generation:\n  backend: openai\n  servers:\n"
        + "    - http://127.0.0.1:8000\n    - http://127.0.0.1:8001/\n  request_timeout_s: 2.5\n"), List.of(), Map.of());

    assertThat(c.serverBackend().servers()).containsExactly("http://127.0.0.1:8000", "http://127.0.0.1:8001");
    assertThat(c.serverBackend().requestTimeout()).hasMillis(2500);
    assertThat(c.serverBackend().launches()).isFalse();
  }

  @Test
  void serverBackend_launchRavel_launchesAndEmbeddedHasNone() {
    RunConfig c = RunConfig.load(null, List.of("generation.backend=openai", "generation.launch=ravel"), Map.of());

    assertThat(c.serverBackend().launches()).isTrue();
    assertThat(c.serverBackend().launch()).isEqualTo("ravel");
    assertThat(RunConfig.load(null, List.of(), Map.of()).serverBackend()).isNull();
  }

  // ---------------------------------------------------------------- accessors

  @ParameterizedTest
  @CsvSource({"sync, SYNC", "async, ASYNC", "ASYNC, ASYNC", "Sync, SYNC"})
  void mode_readsRunModeCaseInsensitively(String value, RunConfig.Mode expected) {
    RunConfig c = RunConfig.load(null, List.of("run.mode=" + value), Map.of());

    assertThat(c.mode()).isEqualTo(expected);
    assertThat(c.mode().configName()).isEqualTo(expected.name().toLowerCase(Locale.ROOT));
  }

  @Test
  void flatten_listsEverySectionKeyWithItsValueAndNoTelemetryKeys() {
    RunConfig c = RunConfig.load(null, List.of("grpo.steps=5", "telemetry.preset=all"), Map.of());

    Map<String, Object> flat = c.flatten();

    int defaults = Keys.all().size();
    assertThat(flat).hasSize(defaults);
    assertThat(flat).containsEntry("grpo.steps", 5)
        .containsEntry("run.mode", "sync")
        .containsEntry("generation.backend", "embedded")
        .containsEntry("cluster.worker_heap_mb", 512);
    assertThat(flat.keySet()).allSatisfy(k -> assertThat(k).matches("(run|cluster|generation|trainer|model|data|reward|eval|grpo)\\.[a-z_]+"));
  }

  @Test
  void resolved_holdsEveryKeyTelemetryIncluded() {
    RunConfig c = RunConfig.load(null, List.of("grpo.steps=5", "telemetry.preset=all", "telemetry.run_id=r-1"),
        Map.of());

    Map<String, Object> all = c.resolved();

    assertThat(all).containsAllEntriesOf(c.flatten()).containsEntry("telemetry.preset", "all")
        .containsEntry("telemetry.run_id", "r-1").containsKeys("telemetry.exporter", "telemetry.engine_sample_ratio");
    assertThat(all.keySet().stream().filter(k -> k.startsWith("telemetry.")))
        .hasSameSizeAs(dev.ravel.telemetry.config.TelemetryConfig.KEYS);
  }

  @Test
  void runtime_pythonForBoth_givesThePythonModel() {
    RunConfig c = RunConfig.load(null, List.of("generation.runtime=python", "trainer.runtime=python",
        "model.family=qwen2", "model.layers=3", "model.hidden=48", "model.heads=6"), Map.of());

    assertThat(c.pythonWorkers()).isTrue();
    assertThat(c.pythonModel(14, 12)).isEqualTo(new dev.ravel.workers.python.PythonModel("qwen2", 14, 3, 48, 6, 12));
  }

  @Test
  void runtime_defaultIsJava() {
    assertThat(RunConfig.load(null, List.of(), Map.of()).pythonWorkers()).isFalse();
  }

  @Test
  void runtime_pythonTrainerWithJavaEngine_isRejectedNamingBothKeys() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("trainer.runtime=python"), Map.of()),
        "trainer.runtime");
    assertThat(e.getMessage()).contains("generation.runtime is java").contains("same model family");
  }

  @Test
  void runtime_pythonEngineWithJavaTrainer_isRejected() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("generation.runtime=python"), Map.of()),
        "trainer.runtime");
    assertThat(e.getMessage()).contains("is java but generation.runtime is python");
  }

  @Test
  void trainerWorkers_aboveOneWithTheJavaTrainer_isRejectedNamingTheRuntimeKeys() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("trainer.workers=2"), Map.of()),
        "trainer.workers");
    assertThat(e.getMessage()).contains("2 ranks").contains("trainer.runtime").contains("leave it 1");
    assertConfigError(() -> RunConfig.load(null, List.of("trainer.workers=0"), Map.of()), "trainer.workers");
    assertConfigError(() -> RunConfig.load(null, List.of("trainer.placement=strict_spread"), Map.of()),
        "trainer.placement");
    RunConfig python = RunConfig.load(null, List.of("generation.runtime=python", "trainer.runtime=python",
        "trainer.workers=2", "trainer.placement=strict_spread"), Map.of());
    assertThat(python.get(Keys.TRAINER_WORKERS)).isEqualTo(2);
  }

  @Test
  void runtime_javaHttpClientsBesideThePythonTrainer_launchVllmComposesItsServeCommand() {
    RunConfig c = RunConfig.load(null, List.of("trainer.runtime=python", "generation.backend=openai",
        "generation.launch=vllm", "model.path=relative/ckpt", "data.train=[train.jsonl]", "generation.vllm=/venv/bin/vllm",
        "run.seed=9"), Map.of());

    assertThat(c.pythonWorkers()).isTrue();
    assertThat(c.pythonGeneration()).isFalse();
    dev.ravel.workers.generation.openai.ServerBackendSpec spec = c.serverBackend();
    assertThat(spec.launches()).isTrue();
    assertThat(spec.launch()).isEmpty();
    String folder = java.nio.file.Path.of("relative/ckpt").toAbsolutePath().normalize().toString();
    // no GPU asked for: vLLM's CPU platform, float32 as the trainer, eager
    assertThat(spec.launchCommand()).isEqualTo("env VLLM_SERVER_DEV_MODE=1 VLLM_TARGET_DEVICE=cpu"
        + " VLLM_CPU_KVCACHE_SPACE=1 /venv/bin/vllm serve " + folder + " --host {host} --port {port}"
        + " --served-model-name {model} --dtype float32 --seed 9 --weight-transfer-config {\"backend\":\"ravel-file\"}"
        + " --logprobs-mode processed_logprobs --generation-config vllm --enforce-eager");
  }

  @Test
  void runtime_javaHttpClientsBesideThePythonTrainer_whatCannotWorkIsRejectedNamingTheKey() {
    List<String> base = List.of("trainer.runtime=python", "generation.backend=openai", "data.train=[train.jsonl]");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(base, "generation.launch=vllm"), Map.of()),
        "model.path").getMessage()).contains("launch: vllm serves your Hugging Face checkpoint");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(base, "generation.launch=ravel", "model.path=/m"),
        Map.of()), "generation.launch").getMessage()).contains("ravel serves Ravel's TinyLm");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(base, "generation.launch=vllm", "model.path=/m",
        "generation.weight_sync=lora"), Map.of()), "generation.weight_sync").getMessage()).contains("PEFT");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(base, "generation.launch=vllm", "model.path=/m",
        "generation.launch_command=vllm serve --port {port}"), Map.of()), "generation.launch_command").getMessage())
        .contains("keep one");
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("generation.backend=openai",
        "generation.launch=vllm", "model.path=/m"), Map.of()), "generation.launch").getMessage())
        .contains("trainer.runtime to python");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(base, "generation.launch=vllm",
        "model.path=/my models/ckpt"), Map.of()), "model.path").getMessage()).contains("holds a space");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(base, "generation.launch=vllm", "model.path=/m",
        "generation.servers=[http://127.0.0.1:8000]"), Map.of()), "generation.launch").getMessage())
        .contains("generation.servers").contains("keep one");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(base, "generation.launch=vllm", "model.path=/m",
        "run.mode=async", "generation.inflight_updates=true"), Map.of()), "generation.inflight_updates").getMessage())
        .contains("return_weight_versions");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(base, "generation.launch=vllm", "model.path=/m",
        "generation.device=cuda"), Map.of()), "generation.device").getMessage()).contains("generation.num_gpus");
    // engine tracing with span files: vLLM's exporter at the run's receiver, over OTLP/HTTP protobuf
    String traced = RunConfig.load(null, concat(base, "generation.launch=vllm", "model.path=/m",
        "telemetry.engine_tracing=true"), Map.of()).serverBackend().launchCommand();
    assertThat(traced).contains(" OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf ")
        .endsWith(" --otlp-traces-endpoint " + dev.ravel.workers.generation.openai.OpenAiBackend.OTLP_ENDPOINT);
    // with OTLP alone too: the receiver sends them on to the run's backend
    assertThat(RunConfig.load(null, concat(base, "generation.launch=vllm", "model.path=/m",
        "telemetry.engine_tracing=true", "telemetry.exporter=otlp"), Map.of()).serverBackend().launchCommand())
        .endsWith(" --otlp-traces-endpoint " + dev.ravel.workers.generation.openai.OpenAiBackend.OTLP_ENDPOINT);
    assertThat(RunConfig.load(null, concat(base, "generation.launch=vllm", "model.path=/m",
        "telemetry.engine_tracing=true", "telemetry.exporter=none"), Map.of()).serverBackend().launchCommand())
        .doesNotContain("otlp");
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("generation.launch=docker"), Map.of()),
        "generation.launch").getMessage()).contains("'docker'").contains("ravel, vllm");
  }

  private static List<String> concat(List<String> base, String... more) {
    List<String> out = new java.util.ArrayList<>(base);
    out.addAll(List.of(more));
    return out;
  }

  @Test
  void runtime_unknown_isRejectedWithTheValidOnes() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("generation.runtime=rust"), Map.of()),
        "generation.runtime");
    assertThat(e.getMessage()).contains("'rust'").contains("java, python");
  }

  @Test
  void engine_vllmWithJavaWorkers_isRejected() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("generation.engine=vllm"), Map.of()),
        "generation.engine");
    assertThat(e.getMessage()).contains("generation.runtime");
  }

  @Test
  void backend_openaiWithPythonWorkers_isRejected() {
    assertConfigError(() -> RunConfig.load(null, List.of("generation.runtime=python", "trainer.runtime=python",
        "generation.backend=openai", "generation.launch=ravel"), Map.of()), "generation.backend");
  }

  @Test
  void model_hiddenNotAMultipleOfHeads_isRejectedNamingModelHidden() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("generation.runtime=python",
        "trainer.runtime=python", "model.hidden=30", "model.heads=4"), Map.of()), "model.hidden");
    assertThat(e.getMessage()).contains("not a multiple of heads");
  }

  @Test
  void model_unknownFamily_isRejected() {
    assertConfigError(() -> RunConfig.load(null, List.of("generation.runtime=python", "trainer.runtime=python",
        "model.family=llama9"), Map.of()), "model.family");
  }

  @Test
  void numGpus_negative_isRejected() {
    assertConfigError(() -> RunConfig.load(null, List.of("trainer.num_gpus=-1"), Map.of()), "trainer.num_gpus");
  }

  @Test
  void device_cudaWithoutGpus_isRejectedBeforeRayStarts() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("generation.runtime=python",
        "trainer.runtime=python", "trainer.device=cuda"), Map.of()), "trainer.device");
    assertThat(e.getMessage()).contains("trainer.num_gpus");
  }

  @Test
  void model_qwen2WithAnOddHeadSize_isRejected() {
    ConfigException e = assertConfigError(() -> RunConfig.load(null, List.of("generation.runtime=python",
        "trainer.runtime=python", "model.family=qwen2", "model.hidden=36", "model.heads=4"), Map.of()), "model.hidden");
    assertThat(e.getMessage()).contains("even");
  }

  @Test
  void device_unknown_isRejected() {
    assertConfigError(() -> RunConfig.load(null, List.of("generation.device=tpu"), Map.of()), "generation.device");
  }

  @Test
  void telemetry_reflectsTelemetryOverrides() {
    RunConfig c = RunConfig.load(null, List.of("telemetry.engine_sample_ratio=1.0", "telemetry.preset=all",
        "telemetry.run_id=run-42", "telemetry.exporter=none", "telemetry.engine_tracing=false"), Map.of());

    assertThat(c.telemetry().engineSampleRatio()).isEqualTo(1.0);
    assertThat(c.telemetry().preset()).isEqualTo(Preset.ALL);
    assertThat(c.telemetry().runId()).isEqualTo("run-42");
    assertThat(c.telemetry().exporter()).isEqualTo(ExporterKind.NONE);
    assertThat(c.telemetry().engineTracing()).isFalse();
  }

  // ---------------------------------------------------------------- shipped examples

  @Test
  void load_syncExampleLoadsAsSync() {
    RunConfig c = RunConfig.load(SYNC_EXAMPLE, List.of(), Map.of());

    assertThat(c.mode()).isEqualTo(RunConfig.Mode.SYNC);
    assertThat(c.get(Keys.STEPS)).isEqualTo(30);
    assertThat(c.get(Keys.WORKER_HEAP_MB)).isEqualTo(384);
    assertThat(c.telemetry().engineTracing()).isTrue();
    assertThat(c.telemetry().engineSampleRatio()).isEqualTo(0.25);
  }

  @Test
  void load_asyncExampleLoadsAsAsync() {
    RunConfig c = RunConfig.load(ASYNC_EXAMPLE, List.of(), Map.of());

    assertThat(c.mode()).isEqualTo(RunConfig.Mode.ASYNC);
    assertThat(c.get(Keys.MAX_TRAJECTORY_AGE_STEPS)).isEqualTo(1);
    assertThat(c.get(Keys.MAX_CONCURRENCY)).isEqualTo(32);
  }

  @Test
  void load_syncExampleWithTheOverridesItsCommentSuggests() {
    RunConfig c = RunConfig.load(SYNC_EXAMPLE, List.of("grpo.steps=5", "telemetry.engine_sample_ratio=1.0"),
        Map.of());

    assertThat(c.get(Keys.STEPS)).isEqualTo(5);
    assertThat(c.telemetry().engineSampleRatio()).isEqualTo(1.0);
  }

  // ---------------------------------------------------------------- helpers

  private Path yaml(String text) throws IOException {
    Path file = tmp.resolve("run.yaml");
    Files.writeString(file, text);
    return file;
  }

  @Test
  void load_yourDataNeedsYourModelAndThePythonWorkers() {
    List<String> python = List.of("generation.runtime=python", "trainer.runtime=python");
    List<String> data = List.of("data.train=[train.jsonl]", "model.path=/m");
    RunConfig ok = RunConfig.load(null, concat(python, data), Map.of());
    assertThat(ok.get(Keys.TRAIN)).containsExactly("train.jsonl");
    assertThat(ok.get(Keys.MODEL_PATH)).isEqualTo("/m");

    assertThat(assertConfigError(() -> RunConfig.load(null, concat(python, List.of("model.path=/m")), Map.of()),
        "model.path").getMessage()).contains("needs your prompts too (data.train)");
    assertThat(assertConfigError(() -> RunConfig.load(null, concat(python, List.of("data.train=a.jsonl")), Map.of()),
        "data.train").getMessage()).contains("set model.path to a Hugging Face checkpoint folder");
    assertThat(assertConfigError(() -> RunConfig.load(null, data, Map.of()), "model.path").getMessage())
        .contains("runs in Ravel's Python workers");
    assertThat(RunConfig.load(null, concat(python, concat(data, List.of("run.mode=async"))), Map.of()).mode())
        .isEqualTo(RunConfig.Mode.ASYNC);
    assertConfigError(() -> RunConfig.load(null, concat(python, List.of("reward.function=exact_match")), Map.of()),
        "reward.function");
    assertConfigError(() -> RunConfig.load(null, concat(python, concat(data, List.of("model.dtype=int8"))), Map.of()),
        "model.dtype");
    assertConfigError(() -> RunConfig.load(null, concat(python, concat(data, List.of("data.long_prompts=keep"))),
        Map.of()), "data.long_prompts");
    RunConfig async = RunConfig.load(null, concat(python, concat(data, List.of("run.mode=async", "data.eval=[e.jsonl]",
        "grpo.eval_every=5"))), Map.of());
    assertThat(async.get(Keys.EVAL_EVERY)).isEqualTo(5); // async runs evaluate too
  }

  @Test
  void load_rewardClass_isLoadedBeforeRayStartsAndRefusedWithYourData() {
    String cls = dev.ravel.driver.grpo.QuarterReward.class.getName();
    assertThat(RunConfig.load(null, List.of("reward.class=" + cls), Map.of()).get(Keys.REWARD_CLASS)).isEqualTo(cls);
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("reward.class=no.such.Reward"), Map.of()),
        "reward.class").getMessage()).contains("no.such.Reward: not found on the classpath");
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("reward.class=java.lang.String"), Map.of()),
        "reward.class").getMessage()).contains("does not implement dev.ravel.workers.reward.RewardFunction");
    assertConfigError(() -> RunConfig.load(null, List.of("generation.runtime=python", "trainer.runtime=python",
        "data.train=[t.jsonl]", "model.path=/m", "reward.class=" + cls), Map.of()), "reward.class");
  }

  @Test
  void load_rewardClassOfYourOwnJar_isFoundThroughTheCodeSearchPath(@org.junit.jupiter.api.io.TempDir Path dir)
      throws Exception {
    Path src = Files.createDirectories(dir.resolve("src/mine"));
    Files.writeString(src.resolve("HalfReward.java"), "package mine;\n"
        + "public final class HalfReward implements dev.ravel.workers.reward.RewardFunction {\n"
        + "  public double[] score(java.util.List<dev.ravel.workers.task.Problem> p, java.util.List<String> c,"
        + " long step) { return new double[c.size()]; }\n}\n");
    Path classes = Files.createDirectories(dir.resolve("classes"));
    int rc = javax.tools.ToolProvider.getSystemJavaCompiler().run(null, null, null, "-d", classes.toString(), "-cp",
        System.getProperty("java.class.path"), src.resolve("HalfReward.java").toString());
    assertThat(rc).isZero();

    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("reward.class=mine.HalfReward"), Map.of()),
        "reward.class").getMessage()).contains("mine.HalfReward: not found on the classpath");
    RunConfig ok = RunConfig.load(null, List.of("reward.class=mine.HalfReward",
        "cluster.code_search_path=[" + classes + "]"), Map.of());
    assertThat(ok.get(Keys.CODE_SEARCH_PATH)).containsExactly(classes.toString());
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("cluster.code_search_path=[" + dir.resolve("no")
        + "]"), Map.of()), "cluster.code_search_path").getMessage()).contains("does not exist");
  }

  @Test
  void load_rewardSettings_areCheckedNamingTheKey() {
    RunConfig ok = RunConfig.load(null, List.of("reward.on_error=zero", "reward.timeout_s=0", "reward.workers=3"),
        Map.of());
    assertThat(ok.get(Keys.REWARD_ON_ERROR)).isEqualTo("zero");
    assertThat(ok.get(Keys.REWARD_WORKERS)).isEqualTo(3);
    assertThat(RunConfig.load(null, List.of(), Map.of()).get(Keys.REWARD_TIMEOUT_S)).isEqualTo(300.0);
    assertThat(assertConfigError(() -> RunConfig.load(null, List.of("reward.on_error=skip"), Map.of()),
        "reward.on_error").getMessage()).contains("fail").contains("zero");
    assertConfigError(() -> RunConfig.load(null, List.of("reward.workers=0"), Map.of()), "reward.workers");
    assertConfigError(() -> RunConfig.load(null, List.of("reward.timeout_s=-1"), Map.of()), "reward.timeout_s");
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> out = new java.util.ArrayList<>(a);
    out.addAll(b);
    return out;
  }

  private static ConfigException assertConfigError(ThrowingCallable call, String key) {
    ConfigException e = catchThrowableOfType(ConfigException.class, call);
    assertThat(e).as("expected a ConfigException naming %s", key).isNotNull();
    assertThat(e.key()).isEqualTo(key);
    assertThat(e.getMessage()).startsWith(key + ": ");
    return e;
  }

  @Test
  void load_commandLineOverrideBeatsTheEnvironment() {
    RunConfig c = RunConfig.load(null, List.of("telemetry.run_id=from-cli"),
        Map.of("RAVEL_TELEMETRY_RUN_ID", "from-env", "RAVEL_TELEMETRY_PRESET", "all"));

    assertThat(c.telemetry().runId()).isEqualTo("from-cli");
    assertThat(c.telemetry().preset().configName()).isEqualTo("all");
  }

  @Test
  void load_overrideTextThatLooksLikeYamlStaysText() {
    RunConfig c = RunConfig.load(null, List.of("telemetry.run_id=0123", "telemetry.service_name=off",
        "cluster.address=127.0.0.1:6379", "grpo.steps=7", "grpo.temperature=0.5"), Map.of());

    assertThat(c.telemetry().runId()).isEqualTo("0123");
    assertThat(c.telemetry().serviceName()).isEqualTo("off");
    assertThat(c.get(Keys.ADDRESS)).isEqualTo("127.0.0.1:6379");
    assertThat(c.get(Keys.STEPS)).isEqualTo(7);
    assertThat(c.get(Keys.TEMPERATURE)).isEqualTo(0.5);
  }
}
