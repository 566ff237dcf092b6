package dev.ravel.workers.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.telemetry.spans.EngineNames;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
final class TraceContextTest {
  private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
  private static final String PARENT_ID = "00f067aa0ba902b7";

  @Test
  void completions_traceparentHeader_everyChoicesLlmRequestIsAChildOfTheCallersSpan() {
    try (TestServer s = TestServer.start()) {
      HttpResponse<String> r = s.post("/v1/completions", "{\"prompt\":[1,10,1,12],\"n\":3,\"max_tokens\":4}",
          Map.of("traceparent", "00-" + TRACE_ID + "-" + PARENT_ID + "-01", "tracestate", "ravel=1",
              "X-Request-Id", "req-42"));

      assertThat(r.statusCode()).isEqualTo(200);
      // the response names the request as vLLM does, behind the object's prefix; the engine's ids are the header's
      assertThat(TestServer.json(r.body()).get("id").asText()).isEqualTo("cmpl-req-42");
      List<SpanData> spans = s.llmRequests();
      assertThat(spans).hasSize(3);
      for (SpanData span : spans) {
        assertThat(span.getKind()).isEqualTo(SpanKind.SERVER);
        assertThat(span.getTraceId()).isEqualTo(TRACE_ID);
        assertThat(span.getParentSpanId()).isEqualTo(PARENT_ID);
        assertThat(span.getParentSpanContext().isRemote()).isTrue();
        assertThat(span.getSpanContext().getTraceState().get("ravel")).isEqualTo("1");
      }
      assertThat(spans).extracting(sp -> sp.getAttributes().get(EngineNames.REQUEST_ID))
          .containsExactlyInAnyOrder("req-42-0", "req-42-1", "req-42-2");
    }
  }

  @Test
  void completions_noTraceHeaders_llmRequestIsARootSpan() {
    try (TestServer s = TestServer.start()) {
      s.ok("/v1/completions", "{\"prompt\":\"1+2=\",\"max_tokens\":3}");

      List<SpanData> spans = s.llmRequests();
      assertThat(spans).hasSize(1);
      assertThat(spans.get(0).getParentSpanContext().isValid()).isFalse();
      assertThat(spans.get(0).getAttributes().get(EngineNames.REQUEST_ID)).startsWith("cmpl-").doesNotEndWith("-0");
    }
  }

  @Test
  void completions_malformedTraceparent_llmRequestIsARootSpanAndTheRequestSucceeds() {
    try (TestServer s = TestServer.start()) {
      HttpResponse<String> r = s.post("/v1/completions", "{\"prompt\":\"1+2=\",\"max_tokens\":3}",
          Map.of("traceparent", "not-a-traceparent"));

      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(s.llmRequests().get(0).getParentSpanContext().isValid()).isFalse();
    }
  }
}
