package dev.ravel.telemetry.traces;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class OtlpJsonTest {
  @Test
  void spans_jaegersClockSkewNotesAreNotSpanAttributes() throws Exception {
    // what Jaeger v2's /api/v3/traces returns for a child span it found starting before its parent under load
    String json = "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"rl.run.id\",\"value\":"
        + "{\"stringValue\":\"r1\"}}]},\"scopeSpans\":[{\"spans\":[{\"traceId\":\"90a6a3fc2f4c8f926aebb008042f8541\","
        + "\"spanId\":\"29e5766202c72b4a\",\"name\":\"llm_request\",\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\","
        + "\"attributes\":[{\"key\":\"gen_ai.request.id\",\"value\":{\"stringValue\":\"s0-p1-0\"}},"
        + "{\"key\":\"@jaeger@warnings\",\"value\":{\"arrayValue\":{\"values\":[{\"stringValue\":"
        + "\"clock skew adjustment disabled; not applying calculated delta of 7.2ms\"}]}}}]}]}]}]}";

    List<SpanRecord> spans = OtlpJson.spans(new ObjectMapper().readTree(json), "jaeger");

    assertThat(spans).singleElement().satisfies(s ->
        assertThat(s.attributes()).isEqualTo(Map.of("gen_ai.request.id", "s0-p1-0")));
  }
}
