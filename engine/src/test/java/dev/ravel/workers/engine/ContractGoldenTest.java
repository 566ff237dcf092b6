package dev.ravel.workers.engine;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ravel.telemetry.contract.Contract;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The engine's side of the contract file the Python workers load: the request sampler against the golden
 * vectors both test suites read (the hash bit for bit, the keep reasons in order) and the finish reasons.
 * (The GRPO side is the workers module's {@code ContractGrpoTest}.)
 */
final class ContractGoldenTest {
  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.isNull() ? null : n.asText()));
    return out;
  }

  @Test
  void unitHash_matchesEveryGoldenValueBitForBit() {
    JsonNode golden = Contract.section("golden").get("sampler_unit_hash");
    assertThat(golden.size()).isPositive();
    golden.fields().forEachRemaining(e -> assertThat(RequestSampler.unitHash(e.getKey())).as(e.getKey())
        .isEqualTo(e.getValue().asDouble()));
  }

  @Test
  void keepReason_matchesEveryGoldenCase() {
    JsonNode cases = Contract.section("golden").get("keep_reason");
    assertThat(cases.size()).isPositive();
    for (JsonNode c : cases) {
      RequestSampler s = new RequestSampler(c.get("tracing").asBoolean(), c.get("ratio").asDouble(),
          c.get("slow_nanos").asLong());
      String expected = c.get("reason").isNull() ? null : c.get("reason").asText();
      assertThat(s.keepReason(c.get("request_id").asText(), c.get("error").asBoolean(), c.get("preemptions").asInt(),
          c.get("e2e_nanos").asLong())).as(c.toString()).isEqualTo(expected);
    }
    assertThat(strings(Contract.section("keep_reasons"))).containsExactly("error", "preempted", "slow", "ratio",
        RequestSampler.PARENT);
  }

  @Test
  void finishReasons_areTheEnumsWireNamesInOrder() {
    assertThat(strings(Contract.section("finish_reasons")))
        .containsExactlyElementsOf(Arrays.stream(FinishReason.values()).map(FinishReason::wireName).toList());
  }
}
