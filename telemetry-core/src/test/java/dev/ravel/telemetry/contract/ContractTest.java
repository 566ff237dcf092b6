package dev.ravel.telemetry.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.telemetry.config.ExporterKind;
import dev.ravel.telemetry.config.Preset;
import dev.ravel.telemetry.config.SpanGroup;
import dev.ravel.telemetry.config.TelemetryConfig;
import dev.ravel.telemetry.otlp.OtlpSettings;
import dev.ravel.telemetry.spans.EngineNames;
import dev.ravel.telemetry.spans.RavelAttributes;
import dev.ravel.telemetry.spans.SpanNames;
import dev.ravel.telemetry.spans.Spans;
import io.opentelemetry.api.common.AttributeKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * telemetry-core's constants against the contract file the Python workers load: each Java constant is
 * named in the file and holds the file's value (the Python side reads the same values; its test_contract.py
 * checks what it does with them).
 */
final class ContractTest {
  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  /** {@code NAME -> key} of the {@code AttributeKey} (or String) constants {@code names} of {@code holder}. */
  private static Map<String, String> constants(Class<?> holder, Iterable<String> names) throws Exception {
    Map<String, String> out = new TreeMap<>();
    for (String name : names) {
      Object v = holder.getField(name).get(null);
      out.put(name, v instanceof AttributeKey<?> k ? k.getKey() : String.valueOf(v));
    }
    return out;
  }

  private static Map<String, String> section(String name) {
    Map<String, String> out = new TreeMap<>();
    Contract.section(name).fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
    return out;
  }

  @Test
  void engineAttributes_eachIsEngineNamesConstantOfThatName() throws Exception {
    Map<String, String> contract = section("engine_attributes");

    assertThat(constants(EngineNames.class, contract.keySet())).isEqualTo(contract);
    assertThat(EngineNames.OPERATION_TEXT_COMPLETION)
        .isEqualTo(Contract.section("engine_values").get("OPERATION_TEXT_COMPLETION").asText());
  }

  @Test
  void roleAndResourceAttributes_areRavelAttributesConstants() throws Exception {
    for (String s : List.of("role_attributes", "resource_attributes")) {
      Map<String, String> contract = section(s);
      assertThat(constants(RavelAttributes.class, contract.keySet())).as(s).isEqualTo(contract);
    }
  }

  @Test
  void scopesAndSpans_areTheJavaNames() {
    assertThat(Contract.section("scopes").get("role").asText()).isEqualTo(Spans.SCOPE);
    assertThat(Contract.section("scopes").get("engine").asText()).isEqualTo(EngineNames.INSTRUMENTATION_SCOPE);
    assertThat(Contract.section("spans").get("llm_request").asText()).isEqualTo(SpanNames.LLM_REQUEST);
    assertThat(SpanNames.VLLM_GENERATE).startsWith(Contract.section("spans").get("role_span_prefix").asText());
  }

  @Test
  void refitSpans_areSpanNamesConstants() throws Exception {
    Map<String, String> contract = section("refit_spans");
    assertThat(contract).isNotEmpty();
    assertThat(constants(SpanNames.class, contract.keySet())).isEqualTo(contract);
  }

  @Test
  void spans_eachSpanNameIsTheSpanNamesConstantOfThatNameInUpperCase() throws Exception {
    Map<String, String> contract = section("spans");
    contract.remove("role_span_prefix");
    Map<String, String> javaNames = new TreeMap<>();
    for (String key : contract.keySet()) {
      javaNames.put(key, (String) SpanNames.class.getField(key.toUpperCase(java.util.Locale.ROOT)).get(null));
    }

    assertThat(javaNames).isEqualTo(contract);
    assertThat(contract).containsKeys("llm_request_queued", "llm_request_prefill", "llm_request_decode",
        "llm_request_preempted", "worker_start_backend", "trainer_load_model", "trainer_gather");
  }

  @Test
  void spanGroupsPresetsAndExporters_areTheEnumsInOrder() {
    assertThat(strings(Contract.section("span_groups")))
        .containsExactlyElementsOf(Arrays.stream(SpanGroup.values()).map(SpanGroup::configName).toList());
    assertThat(strings(Contract.section("exporters")))
        .containsExactlyElementsOf(Arrays.stream(ExporterKind.values()).map(ExporterKind::configName).toList());
    JsonNode presets = Contract.section("presets");
    assertThat(presets.size()).isEqualTo(Preset.values().length);
    for (Preset p : Preset.values()) {
      assertThat(presets.get(p.configName())).as(p.configName()).isNotNull();
      assertThat(strings(presets.get(p.configName()))).as(p.configName())
          .containsExactlyInAnyOrderElementsOf(p.groups().stream().map(SpanGroup::configName).toList());
    }
  }

  @Test
  void environmentPrefixes_areTheWorkerEnvironmentsOwn() {
    assertThat(Contract.section("environment").get("telemetry_prefix").asText()).isEqualTo(TelemetryConfig.ENV_PREFIX);
    assertThat(Contract.section("environment").get("otlp_prefix").asText()).isEqualTo(OtlpSettings.WORKER_PREFIX);
    assertThat(Contract.section("environment").get("startup_traceparent").asText())
        .isEqualTo(dev.ravel.telemetry.context.TraceCarrier.STARTUP_ENV);
  }

  @Test
  void section_absentOneIsNamed() {
    assertThatThrownBy(() -> Contract.section("no_such"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'no_such'");
  }
}
